package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/benchmark"
)

// TestReplays: a later run whose output says "(cached)" where the first's did not, or one
// far faster with the same output and reward, is a replay; anything else is not.
func TestReplays(t *testing.T) {
	tests := []struct {
		name          string
		first, later  string
		dFirst, dLate time.Duration
		rFirst, rLate float64
		replay        bool
		says          string
	}{
		{"go test cache", "ok  \tex/bob\t0.412s\n", "ok  \tex/bob\t(cached)\n", 2 * time.Second, 300 * time.Millisecond, 1, 1, true, `"(cached)"`},
		{"cached both times", "ok  \tex/bob\t(cached)\n", "ok  \tex/bob\t(cached)\n", time.Second, time.Second, 1, 1, false, ""},
		{"ten times faster, same output", "PASS\n", "PASS\n", time.Second, 100 * time.Millisecond, 1, 1, true, "10 times faster"},
		{"faster, other output", "PASS 1\n", "PASS 2\n", time.Second, 100 * time.Millisecond, 1, 1, false, ""},
		{"faster, other reward", "x\n", "x\n", time.Second, 100 * time.Millisecond, 1, 0, false, ""},
		{"same speed, same output", "PASS\n", "PASS\n", time.Second, 900 * time.Millisecond, 1, 1, false, ""},
		{"too short to tell", "PASS\n", "PASS\n", 20 * time.Millisecond, time.Millisecond, 1, 1, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := t.TempDir(), t.TempDir()
			os.WriteFile(filepath.Join(a, "t1.log"), []byte(tt.first), 0o644)
			os.WriteFile(filepath.Join(b, "t1.log"), []byte(tt.later), 0o644)
			var rp replays
			rp.note("t1", benchmark.Result{Reward: reward(tt.rFirst), Duration: tt.dFirst}, benchmark.Result{Reward: reward(tt.rLate), Duration: tt.dLate}, a, b)
			if (rp.count() == 1) != tt.replay {
				t.Fatalf("replay %v, want %v", rp.count() == 1, tt.replay)
			}
			if w := rp.warning(1); tt.replay && (!strings.Contains(w, tt.says) || !strings.Contains(w, "go test -count=1")) {
				t.Errorf("warning %q does not say %s", w, tt.says)
			}
		})
	}
}
