package gitrun

import (
	"fmt"
	"slices"
	"strings"
)

// Entry is one key of a config file as git reads it, with the line it is on (0: not found).
type Entry struct {
	Key   string // section[.subsection].name, section and name lowercased as git prints them
	Value string
	Line  int
}

// allowed reports whether hgate's git may meet a config key (its subsection as "*"):
// what git init, clone and the usual porcelain write, none of which runs a command or
// changes what git reads or writes for the commands hgate runs. Anything else —
// filter.*, diff.*, merge.*, include.*, includeIf.*, core.fsmonitor, core.hooksPath,
// core.worktree, core.sshCommand, core.gitProxy, core.autocrlf, alias.*, … — stops hgate,
// named. A switch, not a map: nothing here runs at hgate's start.
func allowed(key string) bool {
	switch key {
	case "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
		"core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.trustctime",
		"core.checkstat", "core.quotepath", "core.abbrev", "gc.auto",
		"user.name", "user.email",
		"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push",
		"remote.*.tagopt", "remote.*.prune", "remote.*.mirror",
		"branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote",
		"branch.*.description",
		"submodule.*.url", "submodule.*.active",
		"pull.rebase", "pull.ff", "push.default", "fetch.prune",
		"init.defaultbranch", "lfs.repositoryformatversion":
		return true
	}
	return false
}

// pattern is key with its subsection (if any) as "*".
func pattern(key string) string {
	i, j := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if i < 0 || i == j {
		return key
	}
	return key[:i] + ".*" + key[j:]
}

// refuseKeys returns an error naming every key of file outside the allowlist.
func refuseKeys(file string, keys []Entry) error {
	var bad []string
	for _, e := range keys {
		if allowed(pattern(e.Key)) {
			continue
		}
		where := ""
		if e.Line > 0 {
			where = fmt.Sprintf(" (line %d)", e.Line)
		}
		bad = append(bad, e.Key+where)
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s: hgate runs git unattended and only with the keys it needs, none of which can run a command or change what git writes; remove %s (git config --unset) or run hgate on a repository without it",
		file, strings.Join(bad, ", "), plural(len(bad), "this key", "these keys"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// parseList reads git config --null --list: "key\nvalue\x00", or "key\x00" for a key
// without a value. data is the file, to find each key's line.
func parseList(out string, data []byte) []Entry {
	lines := keyLines(string(data))
	var es []Entry
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		k, v, _ := strings.Cut(rec, "\n")
		e := Entry{Key: k, Value: v}
		if ls := lines[strings.ToLower(k)]; len(ls) > 0 {
			e.Line = ls[0]
			lines[strings.ToLower(k)] = ls[1:]
		}
		es = append(es, e)
	}
	return es
}

// keyLines finds, roughly, the line of each key in a config file (lowercased keys): only
// to name it in a message; git's parser decides what the keys are.
func keyLines(text string) map[string][]int {
	out := map[string][]int{}
	section := ""
	for n, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			end := strings.IndexByte(t, ']')
			if end < 0 {
				continue
			}
			h := t[1:end]
			if name, sub, ok := strings.Cut(h, " "); ok {
				h = name + "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			section, t = strings.ToLower(h), strings.TrimSpace(t[end+1:])
		}
		if t == "" || t[0] == '#' || t[0] == ';' || section == "" {
			continue
		}
		name, _, _ := strings.Cut(t, "=")
		key := section + "." + strings.ToLower(strings.TrimSpace(name))
		out[key] = append(out[key], n+1)
	}
	return out
}

// diffEntries names the keys added, removed or changed between two listings; an added
// key outside the allowlist says so.
func diffEntries(was, is []Entry) string {
	str := func(e Entry) string { return e.Key + "=" + e.Value }
	var d []string
	for _, e := range is {
		if slices.ContainsFunc(was, func(o Entry) bool { return str(o) == str(e) }) {
			continue
		}
		s := "added " + e.Key
		if e.Line > 0 {
			s += fmt.Sprintf(" (line %d)", e.Line)
		}
		if !allowed(pattern(e.Key)) {
			s += ", a key that can run a command or change content"
		}
		d = append(d, s)
	}
	for _, e := range was {
		if !slices.ContainsFunc(is, func(o Entry) bool { return str(o) == str(e) }) {
			d = append(d, "removed "+e.Key)
		}
	}
	return strings.Join(d, ", ")
}

// refusedAttrs are the attributes that make git run a driver or convert content.
var refusedAttrs = []string{"filter", "diff", "merge", "ident", "working-tree-encoding", "eol", "text", "crlf"}

// refuseAttributes refuses an info/attributes file that names a driver or a conversion,
// or defines a macro (which could expand to one). Every word of a line is looked at,
// the pattern's too: a stray refusal is better than a driver let through.
func refuseAttributes(file string, data []byte) error {
	var bad []string
	for n, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			continue
		}
		for _, w := range strings.Fields(t) {
			name, _, _ := strings.Cut(strings.TrimLeft(w, "-!\""), "=")
			if strings.HasPrefix(name, "[attr]") || slices.Contains(refusedAttrs, strings.ToLower(name)) {
				bad = append(bad, fmt.Sprintf("%s (line %d)", w, n+1))
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s: an attribute there can make hgate's git run a driver or convert content; remove it", file, strings.Join(bad, ", "))
}
