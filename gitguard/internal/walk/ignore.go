package walk

import "github.com/hgate/hgate/gitguard/internal/pattern"

// Stack is the base's .gitignore rules that apply in one directory,
// outermost first.
type Stack []pattern.List

// Push adds the rules of dir's .gitignore, if any, to st.
func Push(rules map[string]pattern.List, st Stack, dir string) Stack {
	l, ok := rules[dir]
	if !ok {
		return st
	}
	out := make(Stack, len(st), len(st)+1)
	copy(out, st)
	return append(out, l)
}

// Ignored applies the rules in st to p, which lies in a directory that is
// not itself ignored: the deepest .gitignore with a matching line decides;
// the extra patterns (hgate.yaml ignore:) ignore on their own.
func Ignored(extra pattern.List, st Stack, p string, isDir bool) bool {
	if pat := extra.Decide(p, isDir); pat != nil && !pat.Negate {
		return true
	}
	for i := len(st) - 1; i >= 0; i-- {
		if pat := st[i].Decide(p, isDir); pat != nil {
			return !pat.Negate
		}
	}
	return false
}
