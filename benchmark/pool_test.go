package benchmark

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestPoolAhead: a freed slot goes to the first caller waiting ahead, then in arrival
// order; a caller that gives up leaves the queue, and a slot given as it gave up passes on.
func TestPoolAhead(t *testing.T) {
	p := NewPool(1)
	ctx := context.Background()
	if err := p.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 3)
	wait := func(name string, ahead bool) {
		before := queued(p)
		go func() {
			if err := p.acquireAs(ctx, ahead); err != nil {
				t.Error(err)
			}
			order <- name
		}()
		for queued(p) == before {
			time.Sleep(time.Millisecond) // until it waits: arrival order is the test's
		}
	}
	gone, cancel := context.WithCancel(ctx)
	errc := make(chan error)
	go func() { errc <- p.acquireAs(gone, true) }()
	for queued(p) < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled caller got a slot")
	}
	wait("first", false)
	wait("second", false)
	wait("ahead", true)
	var got []string
	for range 3 {
		p.release()
		got = append(got, <-order)
	}
	if want := []string{"ahead", "first", "second"}; !slices.Equal(got, want) {
		t.Errorf("slots went to %v, want %v", got, want)
	}
	p.release()
	if p.free != 1 || queued(p) != 0 {
		t.Errorf("free %d, %d waiting after every slot came back", p.free, queued(p))
	}
}

func queued(p *Pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting[0]) + len(p.waiting[1])
}
