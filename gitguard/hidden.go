package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/gitguard/internal/gitconfig"
	"github.com/hgate/hgate/gitguard/internal/pattern"
	"github.com/hgate/hgate/internal/fsafe"
)

// gitView holds the ignore rules git itself would apply: the .gitignore
// files on disk now, .git/info/exclude and core.excludesFile. The guard never
// lets them hide a file; it only names the rule that tried to.
type gitView struct {
	r       *Repo
	perDir  map[string]patternList // "" or "dir/" → rules, read lazily
	exclude patternList            // info/exclude, then core.excludesFile: one group in git, last line wins
	maxFile int64                  // a .gitignore larger than this is not read
}

func (r *Repo) newGitView(maxFile int64) *gitView {
	v := &gitView{r: r, perDir: map[string]patternList{}, maxFile: maxFile}
	if data, err := os.ReadFile(filepath.Join(r.commonDir, "info", "exclude")); err == nil {
		v.exclude = append(v.exclude, parseList(string(data), ".git/info/exclude", "")...)
	}
	if f := r.excludesFile(); f != "" {
		if data, err := os.ReadFile(f); err == nil {
			// git checks info/exclude before core.excludesFile: put the
			// latter first so info/exclude's lines win as "later" lines.
			l := parseList(string(data), "core.excludesFile "+f, "")
			v.exclude = append(l, v.exclude...)
		}
	}
	return v
}

// excludesFile is core.excludesFile from the repository and global config,
// or git's default $XDG_CONFIG_HOME/git/ignore.
func (r *Repo) excludesFile() string {
	f := ""
	local, global := r.configs()
	for _, cfg := range []*gitconfig.Config{global, local} {
		if v, _ := cfg.Get("core.excludesFile"); v != "" {
			f = v
		}
	}
	home, _ := os.UserHomeDir()
	switch {
	case f == "":
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		if xdg == "" {
			return ""
		}
		return filepath.Join(xdg, "git", "ignore")
	case strings.HasPrefix(f, "~/") && home != "":
		return filepath.Join(home, f[2:])
	case !filepath.IsAbs(f):
		return filepath.Join(r.root, f)
	}
	return f
}

func (v *gitView) dirRules(dir string) patternList {
	if l, ok := v.perDir[dir]; ok {
		return l
	}
	var l patternList
	// An allowed folder's .gitignore is the agent's to write: read only a regular file of
	// a sane size, with fsafe (never through a link at it or at a parent folder).
	if data, err := fsafe.ReadFile(v.r.root, dir+".gitignore", v.maxFile); err == nil {
		l = parseList(string(data), dir+".gitignore", dir)
	}
	v.perDir[dir] = l
	return l
}

// hiddenBy returns the rule that makes git ignore p, or nil.
func (v *gitView) hiddenBy(p string, isDir bool) *pattern.Rule {
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		pat := v.decide(sub, isDir || !last)
		if pat != nil && !pat.Negate {
			return pat
		}
	}
	return nil
}

func (v *gitView) decide(p string, isDir bool) *pattern.Rule {
	dirs := []string{""}
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			dirs = append(dirs, p[:i+1])
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if pat := v.dirRules(dirs[i]).Decide(p, isDir); pat != nil {
			return pat
		}
	}
	return v.exclude.Decide(p, isDir)
}

// explainHidden adds to each untracked violation the ignore rule git would
// have hidden it with.
func (st *state) explainHidden(vs []Violation) error {
	var v *gitView
	for i := range vs {
		ps := st.paths[vs[i].Path]
		if ps == nil || !ps.untracked || ps.w.long {
			continue // a path past MaxPathBytes: its rules, ancestor by ancestor, cost its depth cubed
		}
		if v == nil {
			v = st.s.r.newGitView(st.s.maxFile)
		}
		if pat := v.hiddenBy(ps.path, ps.nested); pat != nil {
			vs[i].Detail = joinNonEmpty(fmt.Sprintf("hidden from git by %s:%d (%s)", pat.Source, pat.LineNo, strings.TrimSpace(pat.Line)), vs[i].Detail)
		}
	}
	return nil
}
