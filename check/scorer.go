package check

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hgate/hgate/config"
)

// scorerFiles are the benchmark's own files that its commands name: each argument of run,
// batch and tasks.command that is a relative path in the tree (with {task} read as any
// one folder or file name), and a Harbor dataset folder with everything in it (its tests
// and verifiers). An allowed file among them is one the agent may edit and the benchmark
// runs to score it.
func scorerFiles(b config.Benchmark) []string {
	var out []string
	for _, a := range slices.Concat(b.Run, b.Batch, b.Tasks.Command) {
		if a == "" || strings.HasPrefix(a, "/") || strings.HasPrefix(a, "-") || strings.Contains(a, "{tasks}") || strings.Contains(a, "{trace_dir}") || strings.Contains(a, "{split}") {
			continue
		}
		// A word that is no file (sh, python) names nothing allowed; {task} alone is an id.
		if glob := path.Clean(strings.ReplaceAll(a, "{task}", "*")); glob != "*" {
			out = append(out, glob)
		}
	}
	if b.Harbor != nil && b.Harbor.Path != "" {
		out = append(out, path.Clean(b.Harbor.Path)+"/**")
	}
	return out
}

// AllowedScorers are the allowed paths that b's commands name (scorerFiles): files the
// agent may edit that score it.
func AllowedScorers(b config.Benchmark, allowed []string) []string {
	scorers := scorerFiles(b)
	var out []string
	for _, p := range allowed {
		if slices.ContainsFunc(scorers, func(s string) bool { return names(s, p) }) {
			out = append(out, p)
		}
	}
	return out
}

// ScorerWarning is what hgate check and prepare say of the allowed files named that the
// benchmark's commands run.
func ScorerWarning(allow, named []string) string {
	return fmt.Sprintf("allow (%s) matches %s, which the benchmark's commands run: the agent may edit what scores it; take it out of allow", strings.Join(allow, ", "), list(named))
}

// names reports whether the pattern s (a path, * for one name, /** for all below) names p.
func names(s, p string) bool {
	if dir, ok := strings.CutSuffix(s, "/**"); ok {
		return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
	}
	ok, err := path.Match(s, p)
	return err == nil && ok
}
