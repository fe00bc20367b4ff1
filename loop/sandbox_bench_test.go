package loop

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/sandbox"
)

// BenchmarkAgentSandbox measures what the sandbox adds to one iteration on a 10k-file
// repository: working out the agent's writable places from allow, the snapshot and check
// of refs/hgate/* around the agent, and starting the agent (a no-op `true`) through the
// sandbox shim, against starting it directly, in the same run. Goal: < 50 ms added.
func BenchmarkAgentSandbox(b *testing.B) {
	if _, err := sandbox.Available(); err != nil {
		b.Skipf("no sandbox here: %v", err)
	}
	r, head := tenThousandFiles(b)
	r.Git("update-ref", "refs/hgate/gated", head)
	r.Git("update-ref", "refs/hgate/ledger", head)
	repo, err := gitguard.Open(r.Dir)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	stdin := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(stdin, []byte("go\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	allow := []string{"agent/agent.sh", "PROGRAM.md"}
	protected := []string{r.Path(".git"), r.Path("workspace")}
	once := func(sandboxed bool) time.Duration {
		start := time.Now()
		a := &agentRun{Args: []string{"true"}, Dir: r.Dir, Env: os.Environ(), Stdin: stdin,
			Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err"), Grace: time.Second}
		if sandboxed {
			write, err := agentWritable(r.Dir, allow, protected)
			if err != nil {
				b.Fatal(err)
			}
			a.Sandbox = &sandbox.Policy{Write: append(write, dir)}
		}
		snap, err := repo.SnapshotRefs(gitguard.RefPrefix)
		if err != nil {
			b.Fatal(err)
		}
		if res := a.run(context.Background()); res.Outcome != AgentOK {
			b.Fatalf("agent %s: %s", res.Outcome, res.Detail)
		}
		if sandboxed {
			now, err := repo.SnapshotRefs(gitguard.RefPrefix)
			if err != nil || len(snap.Changed(now)) > 0 {
				b.Fatalf("refs moved: %v %v", err, snap.Changed(now))
			}
		}
		return time.Since(start)
	}
	var plain, boxed time.Duration
	n := 0
	for b.Loop() {
		n++
		plain += once(false)
		boxed += once(true)
	}
	b.ReportMetric(float64(plain.Microseconds())/1000/float64(n), "ms/plain")
	b.ReportMetric(float64((boxed-plain).Microseconds())/1000/float64(n), "ms-added/iteration")
	b.ReportMetric(float64(boxed)/float64(plain), "x-plain")
}
