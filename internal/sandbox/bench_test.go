package sandbox

import (
	"os/exec"
	"testing"
	"time"
)

// BenchmarkWrap measures a wrapped `true` against a bare one, with and without Reap.
func BenchmarkWrap(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
	w := b.TempDir()
	var bare, plain, reap time.Duration
	for b.Loop() {
		start := time.Now()
		exec.Command("true").Run()
		bare += time.Since(start)
		for _, r := range []bool{false, true} {
			cmd := exec.Command("true")
			Wrap(cmd, Policy{Write: []string{w}, Reap: r})
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			if r {
				reap += time.Since(start)
			} else {
				plain += time.Since(start)
			}
		}
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(bare)/n, "ms/bare")
	b.ReportMetric(float64(plain)/n, "ms/wrapped")
	b.ReportMetric(float64(reap)/n, "ms/wrapped-reap")
}
