package check

import (
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

// allowedScorers are the allowed paths (at HEAD, non-empty) that one of scorers names.
func allowedScorers(scorers, allowed []string) []string {
	var out []string
	for _, p := range allowed {
		if slices.ContainsFunc(scorers, func(s string) bool { return names(s, p) }) {
			out = append(out, p)
		}
	}
	return out
}

// names reports whether the pattern s (a path, * for one name, /** for all below) names p.
func names(s, p string) bool {
	if dir, ok := strings.CutSuffix(s, "/**"); ok {
		return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
	}
	ok, err := path.Match(s, p)
	return err == nil && ok
}
