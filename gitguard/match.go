package gitguard

import "github.com/hgate/hgate/gitguard/internal/pattern"

// Matcher matches slash paths against hgate.yaml's allow patterns; see
// pattern.Matcher for the rules.
type Matcher = pattern.Matcher

// NewMatcher compiles allow patterns; blank lines and "#" comments are skipped.
func NewMatcher(patterns []string) *Matcher { return pattern.NewMatcher(patterns) }

// patternList is the rules of one ignore source (a .gitignore, info/exclude,
// hgate.yaml's ignore); the last match wins.
type patternList = pattern.List

// parseList compiles the lines of an ignore source found in directory base.
func parseList(data, source, base string) patternList { return pattern.Parse(data, source, base) }
