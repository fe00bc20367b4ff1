package loop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/record"
)

// BenchmarkIterationOverhead measures hgate's own work in one iteration on a
// 10k-file repository, outside the agent and the benchmark: the prompt, the
// commit (kept) or the saved attempt and restore (rejected, one worktree
// walk for both), the results.tsv
// row and the learnings entry. Target: under 100 ms.
func BenchmarkIterationOverhead(b *testing.B) {
	r, _ := tenThousandFiles(b)
	repo, err := gitguard.Open(r.Dir)
	if err != nil {
		b.Fatal(err)
	}
	opts := gitguard.Options{Allow: []string{"agent/agent.sh"}}
	ws := r.Path("workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	results := filepath.Join(ws, "results.tsv")
	learnings := filepath.Join(ws, "learnings.md")
	if err := appendRow(results, record.Row{Iteration: 0, Commit: "baseline", Timestamp: time.Now()}); err != nil {
		b.Fatal(err)
	}
	author := gitguard.Signature{Name: "hgate", Email: "hgate@localhost"}
	attempts := 0 // attempt refs must be new across -count runs too
	for _, kept := range []bool{true, false} {
		name := map[bool]string{true: "kept", false: "rejected"}[kept]
		b.Run(name, func(b *testing.B) {
			i := 0
			var total time.Duration
			for b.Loop() {
				i++
				r.Write("agent/agent.sh", fmt.Sprintf("echo %s %d\n", name, i))
				if !kept {
					attempts++
					r.Write("src/d00/f000.txt", fmt.Sprint("cheat ", i))
					r.Write("scratch.txt", "x")
				}
				start := time.Now()
				_ = buildPrompt(promptInput{Program: "# Program\n", Iteration: i, RunID: "bench", Allow: opts.Allow, Learnings: tail(learnings, learningsTail)})
				if kept {
					c, err := repo.CommitCandidate(opts, "bench\n", author)
					if err != nil {
						b.Fatal(err)
					}
					rows, err := record.Load(results)
					if err != nil {
						b.Fatal(err)
					}
					if err := appendRow(results, record.Row{Iteration: len(rows), ValScore: 0.5, Commit: c.String()[:7], Timestamp: time.Now()}); err != nil {
						b.Fatal(err)
					}
				} else {
					// As the loop does when the agent left the branch where it was.
					if _, err := repo.SaveAttemptAndRestore(opts, fmt.Sprintf("refs/hgate/attempts/bench/%d", attempts), "bench\n", author); err != nil {
						b.Fatal(err)
					}
				}
				if err := record.AppendLearning(learnings, record.Learning{Iteration: i, Kept: kept, WhatChanged: "bench"}); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(i), "ms/iteration")
		})
	}
}

// tenThousandFiles is a committed repository of 10k small files, an agent file and a
// program, for the loop's benchmarks; it returns the commit.
func tenThousandFiles(b *testing.B) (*gittest.Repo, string) {
	r := gittest.New(b)
	// A detached auto gc packing the 10k loose objects under the open repository would
	// measure go-git's pack rescan, not hgate.
	r.Git("config", "gc.auto", "0")
	for d := range 100 {
		for f := range 100 {
			r.Write(fmt.Sprintf("src/d%02d/f%03d.txt", d, f), fmt.Sprintf("file %d %d\n", d, f))
		}
	}
	r.WriteFiles(map[string]string{"agent/agent.sh": "echo v0\n", ".gitignore": "/workspace/\n", "PROGRAM.md": "# Program\n"})
	return r, r.Commit("10k files")
}

// appendRow adds r to the results.tsv at path, as the gate's ledger commit writes it.
func appendRow(path string, r record.Row) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := record.AppendTo(path, data, r)
	if err != nil {
		return err
	}
	return statefile.WriteAtomic(path, out)
}
