//go:build linux

package gitguard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// A process of the agent's that outlives it swaps a folder the restore is filling for a
// link to a folder outside the worktree, again and again. Restore acts relative to the
// worktree's descriptor and never follows a link at any component: whatever it manages
// or fails to write, nothing appears outside. (The swap's timing decides how often the
// old by-name restore was caught; this one must never be, at any timing.)
func TestRestoreNeverFollowsASwappedParent(t *testing.T) {
	r := gittest.New(t)
	files := map[string]string{"agent/agent.py": "print('agent')\n"}
	for i := range 300 {
		files[fmt.Sprintf("d/f%03d", i)] = "tracked\n"
	}
	r.WriteFiles(files)
	r.Commit("init")
	if out, err := r.Sh("rm -r d"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	outside := t.TempDir()
	d := r.Path("d")
	var stop atomic.Bool
	var wg sync.WaitGroup
	var once sync.Once
	gitguard.SetRestoreWritten(func(string) {
		once.Do(func() {
			wg.Add(1)
			go func() { // the agent's leftover process
				defer wg.Done()
				for !stop.Load() {
					if os.Rename(d, d+".real") == nil {
						os.Symlink(outside, d)
						os.Remove(d)
						os.Rename(d+".real", d)
					}
				}
			}()
		})
	})
	defer gitguard.SetRestoreWritten(nil)
	err := open(t, r).RestoreHead(gitguard.Options{Allow: []string{"agent/*.py"}})
	stop.Store(true)
	wg.Wait()
	t.Logf("restore under the swap: %v", err) // an error is fine: a link is refused
	got, _ := filepath.Glob(filepath.Join(outside, "*"))
	if len(got) > 0 {
		t.Errorf("restore wrote through the planted link: %d file(s) outside the worktree, e.g. %s", len(got), got[0])
	}
}
