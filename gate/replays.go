package gate

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/internal/fsafe"
)

// A benchmark whose later runs replay the first — a cache answering instead of the
// benchmark, as Go's test cache does for a package whose files did not change ("ok pkg
// (cached)") — scores every task the same in every run whatever its noise, and auto would
// judge it deterministic on no evidence. auto's further runs are compared with the first:
// a run whose output says "(cached)" where the first's did not, or one far faster with the
// same output, is a replay, and auto says so.

// replayFaster is how many times faster than the first a run with the same output must be
// to count as a replay: a cache answers in a fraction of the work.
const replayFaster = 5

// replayMinDuration is the least duration of a first run whose speed-up counts: below it
// a process start dominates and the ratio says nothing.
const replayMinDuration = 50 * time.Millisecond

// replays counts the tasks whose later runs replayed the first, and how they showed it.
type replays struct {
	tasks  map[string]bool
	cached bool    // some later output says "(cached)" where the first's did not
	faster float64 // the largest speed-up of a replay with the same output; 0 when none
}

// note compares one task's later run with its first: results and traces (looked for in
// firstDir and laterDir).
func (rp *replays) note(id string, first, later benchmark.Result, firstDir, laterDir string) {
	a := traceHead(filepath.Join(firstDir, id+".log"))
	b := traceHead(filepath.Join(laterDir, id+".log"))
	cached := bytes.Contains(b, []byte("(cached)")) && !bytes.Contains(a, []byte("(cached)"))
	fast := first.Duration >= replayMinDuration && later.Duration > 0 && later.Duration*replayFaster <= first.Duration
	same := a != nil && bytes.Equal(a, b) && !varies([]*float64{first.Reward, later.Reward})
	if !cached && !(fast && same) {
		return
	}
	if rp.tasks == nil {
		rp.tasks = map[string]bool{}
	}
	rp.tasks[id] = true
	rp.cached = rp.cached || cached
	if fast && same {
		rp.faster = max(rp.faster, float64(first.Duration)/float64(later.Duration))
	}
}

func (rp *replays) count() int { return len(rp.tasks) }

// warning says what was seen, and the way on.
func (rp *replays) warning(total int) string {
	var how []string
	if rp.cached {
		how = append(how, `their output says "(cached)"`)
	}
	if rp.faster > 0 {
		how = append(how, fmt.Sprintf("up to %.0f times faster with the same output", rp.faster))
	}
	return fmt.Sprintf("prepare's later runs of %d of %d task(s) look like replays of the first (%s): a cache answers instead of the benchmark, so runs that agree prove nothing about noise. "+
		"Make every run do the work (Go: go test -count=1, which bypasses the test cache), commit, and run hgate prepare --reset",
		rp.count(), total, strings.Join(how, "; "))
}

// traceHead is the first 64 KiB of a trace; nil when there is none.
func traceHead(path string) []byte {
	f, err := fsafe.Open(path, traceReadMax) // a trace: {trace_dir} is the tasks'
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil
	}
	return data
}

// traceReadMax bounds a trace hgate reads back: each keeps at most the first and last MiB
// of a task's output.
const traceReadMax = 4 << 20
