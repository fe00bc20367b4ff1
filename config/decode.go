package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/hgate/hgate/internal/lazyre"
)

// problem is one error found in the file; line 0 means the file as a whole.
type problem struct {
	line int
	text string
}

// decoder walks the yaml.Node tree of one file, collecting every problem instead
// of stopping at the first.
type decoder struct {
	file      string
	dir       string  // the repository root, to suggest relative spellings of absolute paths
	cfg       *Config // the configuration being decoded, for checks across sections
	problems  []problem
	warns     []string
	warnLines map[string]int
}

// where formats the "FILE:LINE: path: " prefix of a message.
func (d *decoder) where(n *yaml.Node, path string) (string, int) {
	var b strings.Builder
	b.WriteString(d.file)
	line := 0
	if n != nil && n.Line > 0 {
		line = n.Line
		fmt.Fprintf(&b, ":%d", line)
	}
	b.WriteString(": ")
	if path != "" {
		b.WriteString(path)
		b.WriteString(": ")
	}
	return b.String(), line
}

func (d *decoder) failf(n *yaml.Node, path, format string, args ...any) {
	prefix, line := d.where(n, path)
	d.problems = append(d.problems, problem{line: line, text: prefix + fmt.Sprintf(format, args...)})
}

func (d *decoder) warnf(n *yaml.Node, path, format string, args ...any) {
	prefix, line := d.where(n, path)
	w := prefix + fmt.Sprintf(format, args...)
	d.warns = append(d.warns, w)
	if d.warnLines == nil {
		d.warnLines = map[string]int{}
	}
	d.warnLines[w] = line
}

// err joins the problems in file order; problems about the file as a whole
// (missing keys) come last. Warnings join them, so that one run shows everything
// to fix.
func (d *decoder) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	for _, w := range d.warns {
		d.problems = append(d.problems, problem{line: d.warnLines[w], text: w})
	}
	sort.SliceStable(d.problems, func(i, j int) bool {
		a, b := d.problems[i].line, d.problems[j].line
		if a == 0 || b == 0 {
			return a != 0 && b == 0
		}
		return a < b
	})
	errs := make([]error, len(d.problems))
	for i, p := range d.problems {
		errs[i] = errors.New(p.text)
	}
	return errors.Join(errs...)
}

var digitsRE = lazyre.New(`^[-+]?[0-9]+$`)

var yamlLineErr = lazyre.New(`^yaml: line (\d+): (.*)$`)
var unknownAnchorErr = lazyre.New(`^yaml: unknown anchor '(.*)' referenced$`)

// decodeFile parses data as a single yaml document and decodes it into cfg.
func (d *decoder) decodeFile(data []byte, cfg *Config) {
	root, ok := d.parseYAML(data)
	if !ok {
		return
	}
	d.decodeRoot(root, cfg)
}

// parseYAML returns the top-level node of the only document in data, or reports
// why there is none.
func (d *decoder) parseYAML(data []byte) (root *yaml.Node, ok bool) {
	defer func() {
		// The yaml library is not ours; a panic inside it must not take the CLI down.
		if r := recover(); r != nil {
			d.failf(nil, "", "invalid yaml: the parser failed (%v)", r)
			root, ok = nil, false
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.failf(nil, "", "the file is empty (expected at least allow: and benchmark:)")
		} else {
			d.syntaxError(data, err)
		}
		return nil, false
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		d.failf(nil, "", "the file is empty (expected at least allow: and benchmark:)")
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntaxError(data, err)
		return nil, false
	default:
		d.failf(&next, "", "a second yaml document (expected one document; remove the line with ---)")
		return nil, false
	}
	return doc.Content[0], true
}

// parserProblems are the yaml library's parser errors (its scanner's are others), with the
// bracket that opens the construct each is about ("" for a block). The library counts their
// line from 0 where it counts a scanner error's from 1, so a mistake on line 3 read "line 2".
// The line is the construct's first (an unclosed {), or, when that is line 1, the library
// gives the problem's instead.
var parserProblems = map[string]string{
	"did not find expected ',' or ']'":       "[",
	"did not find expected ',' or '}'":       "{",
	"did not find expected '-' indicator":    "",
	"did not find expected key":              "",
	"did not find expected node content":     "",
	"did not find expected <document start>": "",
	"found undefined tag handle":             "",
}

// parserLine turns the line the yaml library reports with a parser problem into the line
// the construct it is about begins on, counted from 1.
func parserLine(data []byte, reported int, opener string) int {
	line := reported + 1
	if opener != "" && !lineHas(data, line, opener) && lineHas(data, 1, opener) {
		line = 1 // the construct began on line 1, and the library gave the problem's line
	}
	return line
}

// lineHas reports whether line n (from 1) of data contains s.
func lineHas(data []byte, n int, s string) bool {
	lines := bytes.Split(data, []byte("\n"))
	return n >= 1 && n <= len(lines) && bytes.Contains(lines[n-1], []byte(s))
}

// syntaxError reports a yaml parse error with its line.
func (d *decoder) syntaxError(data []byte, err error) {
	msg := err.Error()
	if _, ok := parserProblems[strings.TrimPrefix(msg, "yaml: ")]; ok {
		// Both of the library's marks were on its line 0: the first line.
		msg = "yaml: line 0: " + strings.TrimPrefix(msg, "yaml: ")
	}
	if m := yamlLineErr.Get().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		text := m[2]
		if opener, ok := parserProblems[text]; ok {
			line = parserLine(data, line, opener)
		}
		if hasTabIndent(data, line) {
			text += " (yaml is indented with spaces, not tabs)"
		} else if ph := unquotedPlaceholder(data, line); ph != "" {
			text += fmt.Sprintf(` (quote a value holding %s: unquoted, yaml reads { as the start of a mapping, e.g. "tasks/%s/check.sh")`, ph, ph)
		}
		d.failf(&yaml.Node{Line: line}, "", "invalid yaml: %s", text)
		return
	}
	if m := unknownAnchorErr.Get().FindStringSubmatch(msg); m != nil {
		// The library gives no line here; the first use of the alias is where it fails.
		line := lineOf(data, "*"+m[1])
		d.failf(&yaml.Node{Line: line}, "", "invalid yaml: alias *%s refers to no anchor (expected &%s defined above it)", m[1], m[1])
		return
	}
	d.failf(nil, "", "invalid yaml: %s", strings.TrimPrefix(msg, "yaml: "))
}

var placeholderRe = lazyre.New(`\{[a-z_]+\}`)

// unquotedPlaceholder returns the first placeholder ({task}, {tasks}, ...) outside quotes
// on line n (from 1) or the line after it (a block's problem is reported on its first
// line), or "".
func unquotedPlaceholder(data []byte, n int) string {
	lines := bytes.Split(data, []byte("\n"))
	for i := n; i <= n+1 && i <= len(lines); i++ {
		if i < 1 {
			continue
		}
		line := lines[i-1]
		for _, loc := range placeholderRe.Get().FindAllIndex(line, -1) {
			if !inQuotes(line[:loc[0]]) {
				return string(line[loc[0]:loc[1]])
			}
		}
	}
	return ""
}

// inQuotes reports whether the text before a position leaves a yaml quote open. A
// doubled single quote closes and reopens, which comes to the same; \" in double quotes
// is skipped.
func inQuotes(before []byte) bool {
	var open byte
	for i := 0; i < len(before); i++ {
		c := before[i]
		switch {
		case open == 0 && (c == '"' || c == '\''):
			open = c
		case open == '"' && c == '\\':
			i++
		case open == c:
			open = 0
		}
	}
	return open != 0
}

func hasTabIndent(data []byte, line int) bool {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return false
	}
	l := lines[line-1]
	return len(l) > len(bytes.TrimLeft(l, " \t")) && bytes.ContainsRune(l[:len(l)-len(bytes.TrimLeft(l, " \t"))], '\t')
}

// lineOf returns the 1-based line of the first occurrence of s in data, or 0.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names a value for a message without any Go type name.
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil:
		return "no value"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind != yaml.ScalarNode:
		return "this value"
	case n.ShortTag() == "!!null":
		return "no value"
	}
	v := n.Value
	if r := []rune(v); len(r) > 40 {
		v = string(r[:37]) + "..."
	}
	if n.ShortTag() == "!!str" {
		return strconv.Quote(v)
	}
	return v
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// entry is one key of a mapping with the node of its key (for the line) and value.
type entry struct {
	key, val *yaml.Node
}

// mapping checks that n is a mapping whose keys are among known (any key when
// known is nil) and returns its entries by key. No value counts as an empty
// mapping. ok is false when n is not a mapping at all.
func (d *decoder) mapping(n *yaml.Node, path string, known []string) (map[string]entry, bool) {
	out := map[string]entry{}
	if isNull(n) {
		return out, true
	}
	m := resolve(n)
	if m.Kind != yaml.MappingNode {
		if known != nil {
			d.failf(n, path, "%s is not a mapping (expected keys such as %s)", describe(n), strings.Join(known, ", "))
		} else {
			d.failf(n, path, "%s is not a mapping (expected NAME: value lines)", describe(n))
		}
		return nil, false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		rk := resolve(k)
		if rk.Kind != yaml.ScalarNode {
			d.failf(k, path, "%s is not a valid key (expected a name)", describe(k))
			continue
		}
		name := rk.Value
		full := join(path, displayKey(name))
		if name == "<<" {
			d.failf(k, full, "merge keys are not supported (expected the keys written out)")
			continue
		}
		if known != nil && !contains(known, name) {
			hint := ""
			if s := closest(name, known); s != "" {
				hint = ", did you mean " + s + "?"
			}
			d.failf(k, full, "unknown key%s (expected one of: %s)", hint, strings.Join(known, ", "))
			continue
		}
		if prev, dup := out[name]; dup {
			d.failf(k, full, "set twice (first on line %d)", prev.key.Line)
			continue
		}
		out[name] = entry{key: k, val: v}
	}
	return out, true
}

// displayKey quotes a key that would not read well bare in a message (empty, or
// holding spaces or control characters), keeping every message on one line.
func displayKey(k string) string {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool { return r == ' ' || !unicode.IsPrint(r) }) {
		return strconv.Quote(k)
	}
	return k
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// text decodes a scalar as a string; numbers and booleans keep their spelling
// (`run: [sleep, 5]`).
func (d *decoder) text(n *yaml.Node, path, expected string) (string, bool) {
	r, ok := d.value(n, path, expected)
	if !ok {
		return "", false
	}
	if r.Kind != yaml.ScalarNode {
		d.failf(n, path, "%s is not text (expected %s)%s", describe(n), expected, placeholderMapHint(r))
		return "", false
	}
	return r.Value, true
}

// placeholderMapHint explains a mapping that an unquoted placeholder made: yaml reads
// {task} as {task: null}.
func placeholderMapHint(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle == 0 || len(n.Content) != 2 ||
		n.Content[0].Kind != yaml.ScalarNode || !isNull(n.Content[1]) {
		return ""
	}
	return fmt.Sprintf(`; yaml reads an unquoted {%s} as a mapping: quote it, "{%s}"`, n.Content[0].Value, n.Content[0].Value)
}

// textList decodes a list of scalars. No value is an empty list.
func (d *decoder) textList(n *yaml.Node, path, expected string) ([]string, bool) {
	if isNull(n) {
		return nil, true
	}
	r := resolve(n)
	if r.Kind != yaml.SequenceNode {
		d.failf(n, path, "%s is not a list (expected %s)", describe(n), expected)
		return nil, false
	}
	out := make([]string, 0, len(r.Content))
	ok := true
	for i, item := range r.Content {
		s, good := d.text(item, fmt.Sprintf("%s[%d]", path, i), "text")
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// value resolves n for a decoder that needs a value: no value is a problem,
// "no value (expected EXPECTED)".
func (d *decoder) value(n *yaml.Node, path, expected string) (*yaml.Node, bool) {
	if isNull(n) {
		d.failf(n, path, "no value (expected %s)", expected)
		return nil, false
	}
	return resolve(n), true
}

// integer decodes a whole number; a quoted "4" is accepted as well.
func (d *decoder) integer(n *yaml.Node, path, example string) (int64, bool) {
	return scalar(d, n, path, "a whole number", example, func(r *yaml.Node) (int64, error) {
		switch r.ShortTag() {
		case "!!int":
			var v int64
			if r.Decode(&v) != nil {
				return 0, errTooLarge
			}
			return v, nil
		case "!!str":
			return strconv.ParseInt(strings.TrimSpace(r.Value), 10, 64)
		case "!!float":
			// yaml reads digits too long for an integer as a float.
			if digitsRE.Get().MatchString(r.Value) {
				return 0, errTooLarge
			}
		}
		return 0, errNotScalar
	})
}

// smallInt is integer limited to the range of int.
func (d *decoder) smallInt(n *yaml.Node, path, example string) (int, bool) {
	v, ok := d.integer(n, path, example)
	if !ok {
		return 0, false
	}
	if v > math.MaxInt32 || v < math.MinInt32 {
		d.failf(n, path, "%d is too large (expected e.g. %s)", v, example)
		return 0, false
	}
	return int(v), true
}

// number decodes a finite decimal number; a quoted "0.5" is accepted as well.
func (d *decoder) number(n *yaml.Node, path, example string) (float64, bool) {
	return scalar(d, n, path, "a number", example, func(r *yaml.Node) (v float64, err error) {
		switch r.ShortTag() {
		case "!!int", "!!float":
			err = r.Decode(&v)
		case "!!str":
			v, err = strconv.ParseFloat(strings.TrimSpace(r.Value), 64)
		default:
			err = errNotScalar
		}
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			err = errNotScalar
		}
		return v, err
	})
}

var (
	errTooLarge  = errors.New("too large")
	errNotScalar = errors.New("not the scalar expected")
)

// scalar decodes a scalar with parse, which sees it resolved. No value is "no value
// (expected WHAT, e.g. EXAMPLE)"; what parse refuses is "DESCRIBED is not WHAT (expected
// e.g. EXAMPLE)", or "... is too large ..." when parse says errTooLarge.
func scalar[T any](d *decoder, n *yaml.Node, path, what, example string, parse func(r *yaml.Node) (T, error)) (T, bool) {
	var zero T
	r, ok := d.value(n, path, what+", e.g. "+example)
	if !ok {
		return zero, false
	}
	v, err := zero, errNotScalar
	if r.Kind == yaml.ScalarNode {
		v, err = parse(r)
	}
	switch {
	case err == nil:
		return v, true
	case errors.Is(err, errTooLarge):
		d.failf(n, path, "%s is too large (expected e.g. %s)", describe(n), example)
	default:
		d.failf(n, path, "%s is not %s (expected e.g. %s)", describe(n), what, example)
	}
	return zero, false
}

// duration decodes a Go duration such as "10m" or "1h30m".
func (d *decoder) duration(n *yaml.Node, path, example string) (time.Duration, bool) {
	r, ok := d.value(n, path, "a duration such as "+example)
	if !ok {
		return 0, false
	}
	if r.Kind != yaml.ScalarNode {
		d.failf(n, path, "%s is not a duration (expected e.g. %s)", describe(n), example)
		return 0, false
	}
	s := strings.TrimSpace(r.Value)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		d.failf(n, path, "%s has no unit (expected a duration with a unit, e.g. %s or %ss)", describe(n), example, s)
		return 0, false
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.failf(n, path, "%s is not a duration (expected e.g. %s, 90s or 1h30m)", describe(n), example)
		return 0, false
	}
	return v, true
}

// boolean decodes true/false (yes/no and on/off too); anything else is an error.
func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	r := resolve(n)
	if !isNull(n) && r.Kind == yaml.ScalarNode {
		switch strings.ToLower(strings.TrimSpace(r.Value)) {
		case "true", "yes", "on":
			return true, true
		case "false", "no", "off":
			return false, true
		}
	}
	d.failf(n, path, "%s is not true or false (expected true or false)", describe(n))
	return false, false
}

// fileGuard reads file_guard conservatively: the guard is what keeps the agent
// honest, so only an unmistakable "off" disables it and anything else keeps it
// on with a warning rather than failing the whole run.
func (d *decoder) fileGuard(n *yaml.Node, path string) bool {
	r := resolve(n)
	if r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() != "!!null" {
		switch strings.ToLower(strings.TrimSpace(r.Value)) {
		case "false", "no", "off", "0", "":
			return false
		case "true", "yes", "on", "1":
			return true
		}
	}
	d.warnf(n, path, "%s is not false/no/off/0; the guard stays on", describe(n))
	return true
}

// closest returns the known key a mistyped key obviously meant, or "".
func closest(key string, known []string) string {
	norm := func(s string) string {
		s = strings.ToLower(s)
		return strings.NewReplacer("_", "", "-", "", " ", "").Replace(s)
	}
	for _, k := range known {
		if norm(k) == norm(key) {
			return k
		}
	}
	// On a tie, a candidate of the key's own length wins: "taks" is "task"
	// with two letters swapped more likely than "tasks" with one missing.
	best, bestDist, tie := "", 1<<30, false
	for _, k := range known {
		dist := editDistance(strings.ToLower(key), k)
		switch {
		case dist < bestDist:
			best, bestDist, tie = k, dist, false
		case dist == bestDist:
			sameBest, sameK := len(best) == len(key), len(k) == len(key)
			switch {
			case sameK && !sameBest:
				best, tie = k, false
			case sameK == sameBest:
				tie = true
			}
		}
	}
	limit := 1
	if len(best) > 5 {
		limit = 2
	}
	if tie || bestDist > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions, deletions,
// substitutions and swaps of neighbours each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
