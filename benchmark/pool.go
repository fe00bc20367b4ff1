package benchmark

import (
	"context"
	"runtime"
	"sync"
)

// Pool bounds how many commands run at once. One Pool may serve several concurrent Run
// calls (the gate runs the suite and the test split at the same time); waiting callers
// are served in arrival order, those of a Request with Ahead first.
type Pool struct {
	mu      sync.Mutex
	size    int
	free    int
	waiting [2][]chan struct{} // [0]: ahead, [1]: the others; a closed channel is a slot given
}

// NewPool returns a pool of n slots; n < 1 means runtime.NumCPU().
func NewPool(n int) *Pool {
	if n < 1 {
		n = runtime.NumCPU()
	}
	return &Pool{size: n, free: n}
}

func (p *Pool) acquire(ctx context.Context) error { return p.acquireAs(ctx, false) }

// acquireAs takes a slot, waiting behind the callers before it of its rank (ahead or not)
// and behind every caller waiting ahead. Once ctx is done no slot is taken: a slot and a
// cancellation both ready, cancellation wins, so that no task starts after it.
func (p *Pool) acquireAs(ctx context.Context, ahead bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rank := 1
	if ahead {
		rank = 0
	}
	p.mu.Lock()
	if p.free > 0 && len(p.waiting[0]) == 0 && (ahead || len(p.waiting[1]) == 0) {
		p.free--
		p.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	p.waiting[rank] = append(p.waiting[rank], w)
	p.mu.Unlock()
	select {
	case <-w:
		if err := ctx.Err(); err != nil {
			p.release()
			return err
		}
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, q := range p.waiting[rank] {
			if q == w { // not given a slot: leave the queue
				p.waiting[rank] = append(p.waiting[rank][:i], p.waiting[rank][i+1:]...)
				return ctx.Err()
			}
		}
		p.releaseLocked() // given one as ctx ended: pass it on
		return ctx.Err()
	}
}

// tryAcquire takes a slot when acquireAs would without waiting: one is free, no caller
// of its rank or ahead of it waits, and ctx is not done.
func (p *Pool) tryAcquire(ctx context.Context, ahead bool) bool {
	if ctx.Err() != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free > 0 && len(p.waiting[0]) == 0 && (ahead || len(p.waiting[1]) == 0) {
		p.free--
		return true
	}
	return false
}

// release gives the slot to the first caller waiting (ahead first), or frees it.
func (p *Pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked()
}

func (p *Pool) releaseLocked() {
	for rank := range p.waiting {
		if q := p.waiting[rank]; len(q) > 0 {
			p.waiting[rank] = q[1:]
			close(q[0])
			return
		}
	}
	p.free++
}
