package benchmark

import (
	"context"

	"github.com/hgate/hgate/internal/timeline"
)

// warmTask is a queued task whose sandbox shim was started before a slot was free for
// it (sandbox.WrapWarm): its namespaces, mounts and Landlock are set up while other tasks
// run, and its command starts when a slot is (process.release). It is started with its
// own policy, TMPDIR, cache layers and trace, exactly as it would be at its turn.
type warmTask struct {
	id      string
	t       *taskOutput
	p       *process
	cleanup func()
	err     error
}

// warmer keeps the shims of the next queued tasks of one run warm, at most one per pool
// slot. Scheduling stays list scheduling: whichever slot frees first takes the next task
// in queue order, and a warm shim is that task's, not a slot's. Every warm shim belongs
// to its run and ends with it: one never released is ended by discard.
//
// A warm shim starts only once the shims of the tasks begun so far have set up: its own
// set-up is CPU work, and while a begun task's shim still sets up (the first round's,
// started cold all at once) it would take the CPU from one whose command is due.
type warmer struct {
	r        *Runner
	req      Request
	traceDir string
	ahead    []*warmTask       // in queue order
	begun    []<-chan struct{} // the ready channels of begun tasks' shims not known set up
}

// newWarmer returns the warmer of a per-task run, or nil where tasks do not start through
// a shim that can wait (no sandbox, or one without namespaces): nothing changes there.
func (r *Runner) newWarmer(req Request, traceDir string) *warmer {
	if r.Sandbox == nil || !r.Sandbox.Isolate {
		return nil
	}
	return &warmer{r: r, req: req, traceDir: traceDir}
}

// await takes a pool slot for ids[0], the next queued task, as pool.acquireAs does. While
// it waits, and once the shims of the tasks begun so far have set up, it starts the shims
// of ids (the next queued tasks, in order) not warm yet. A slot that frees first is taken
// at once: the shims not started yet wait for the next call.
func (w *warmer) await(ctx context.Context, pool *Pool, ahead bool, ids []string) error {
	if w == nil {
		return pool.acquireAs(ctx, ahead)
	}
	got := make(chan error, 1)
	go func() { got <- pool.acquireAs(ctx, ahead) }()
	if len(w.ahead) < len(ids) {
		select {
		case err := <-got:
			return err
		case <-w.settled():
		}
		for _, id := range ids[min(len(w.ahead), len(ids)):] {
			w.ahead = append(w.ahead, w.start(id))
		}
	}
	return <-got
}

// settled returns a channel closed once every begun task's shim has set up (or is gone).
func (w *warmer) settled() <-chan struct{} {
	var left []<-chan struct{}
	for _, c := range w.begun {
		select {
		case <-c:
		default:
			left = append(left, c)
		}
	}
	w.begun = left
	done := make(chan struct{})
	go func() {
		for _, c := range left {
			<-c
		}
		close(done)
	}()
	return done
}

// start starts one task's shim warm, as Runner.start starts it cold.
func (w *warmer) start(id string) *warmTask {
	r, req := w.r, w.req
	argv, env := r.command(r.Config.Run, id, req, w.traceDir)
	wt := &warmTask{id: id}
	spec := procSpec{argv: argv, dir: r.Dir, env: env, timeout: r.Config.TaskTimeout, warm: true}
	wt.t, wt.p, wt.cleanup, wt.err = r.launchSpec(spec, id, req, w.traceDir)
	timeline.Mark("task %s %s trial %d: warm", req.Split, id, max(req.Trial, 1))
	return wt
}

// take returns the warm shim of id, the next task in queue, and forgets it; nil when id
// has none.
func (w *warmer) take(id string) *warmTask {
	if w == nil || len(w.ahead) == 0 || w.ahead[0].id != id {
		return nil
	}
	wt := w.ahead[0]
	w.ahead = w.ahead[1:]
	return wt
}

// discard ends every warm shim not taken (the run was cancelled): none starts its
// command, none outlives the run, their TMPDIRs and layers are removed and their traces
// never published.
func (w *warmer) discard() {
	if w == nil {
		return
	}
	for _, wt := range w.ahead {
		if wt.p != nil {
			wt.p.abandon()
		}
		wt.cleanup()
		wt.t.discard()
	}
	w.ahead = nil
}

// begin starts task id in the slot just taken: its warm shim released, or started cold.
func (r *Runner) begin(w *warmer, id string, req Request, traceDir string) (*taskOutput, *process, func(), error) {
	if wt := w.take(id); wt != nil {
		if wt.err == nil {
			wt.p.release()
			w.track(wt.p)
		}
		return wt.t, wt.p, wt.cleanup, wt.err
	}
	t, p, cleanup, err := r.start(r.Config.Run, id, id, req, traceDir)
	if err == nil {
		w.track(p)
	}
	return t, p, cleanup, err
}

// track notes the shim of a task just begun, whose set-up the next warm shims wait for.
func (w *warmer) track(p *process) {
	if w != nil {
		w.begun = append(w.begun, p.ready)
	}
}
