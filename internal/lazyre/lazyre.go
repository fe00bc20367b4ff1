// Package lazyre holds regular expressions compiled on their first use. A package-level
// *RE is static data: neither compiling nor a closure (as sync.OnceValue would allocate)
// costs every hgate command, --version included, at its start.
package lazyre

import (
	"regexp"
	"sync"
)

// RE is the regular expression Expr, compiled by the first Get.
type RE struct {
	once sync.Once
	re   *regexp.Regexp
	expr string
}

// New returns an RE for expr; nothing is compiled until Get.
func New(expr string) *RE { return &RE{expr: expr} }

// Get is the compiled expression; an invalid one panics, as regexp.MustCompile does.
func (l *RE) Get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.expr) })
	return l.re
}
