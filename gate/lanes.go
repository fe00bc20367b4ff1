package gate

import (
	"context"
	"slices"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/split"
)

// requester runs one request: a benchmark.Runner, or baselineLanes.
type requester interface {
	Run(ctx context.Context, req benchmark.Request) (*benchmark.Outcome, error)
}

// baselineLanes runs prepare's baseline without ever mixing the splits in one run
// request: with the split known, the test tasks run in a test lane ({split} test) and
// every other task in a train lane ({split} train), as two requests. Before the split
// is made (sp nil), no task is a test task yet: every one runs in a train lane
// ({split} all), which reads no test-only data and fills the caches; where a test lane
// reads more (clean_room.test_only, loop.sandbox.hidden), prepare runs the test tasks
// again in one once the split is made (testAgain).
type baselineLanes struct {
	rm *cleanroom.Room
	sp *split.Split
}

// Run runs req's tasks, split by lane, and returns one outcome for them all.
func (b *baselineLanes) Run(ctx context.Context, req benchmark.Request) (*benchmark.Outcome, error) {
	if b.sp == nil {
		run, err := b.rm.Runner(nil, cleanroom.Train)
		if err != nil {
			return nil, err
		}
		return run.Run(ctx, req)
	}
	var train, test []string
	for _, id := range req.Tasks {
		if slices.Contains(b.sp.Test, id) {
			test = append(test, id)
		} else {
			train = append(train, id)
		}
	}
	out := &benchmark.Outcome{Results: make(map[string]benchmark.Result, len(req.Tasks))}
	done := 0
	for _, part := range []struct {
		lane  cleanroom.Split
		tasks []string
	}{{cleanroom.Train, train}, {cleanroom.Test, test}} {
		if len(part.tasks) == 0 {
			continue
		}
		run, err := b.rm.Runner(nil, part.lane)
		if err != nil {
			return nil, err
		}
		r := req
		r.Split, r.Tasks = part.lane.String(), part.tasks
		if req.Progress != nil {
			offset := done
			r.Progress = func(n, _ int, res benchmark.Result) { req.Progress(offset+n, len(req.Tasks), res) }
		}
		o, err := run.Run(ctx, r)
		if o != nil {
			for id, res := range o.Results {
				out.Results[id] = res
			}
			out.Problems = append(out.Problems, o.Problems...)
			out.Spend.Add(o.Spend)
		}
		if err != nil {
			return out, err
		}
		done += len(part.tasks)
	}
	return out, nil
}
