package loop_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/hgate/hgate/internal/lock"
	"github.com/hgate/hgate/loop"
)

// TestLockWriteFailureIsNoRefusal: a repository lock that cannot be written (a full disk)
// is an internal failure of the start, with its own error; only a lock another hgate holds
// is the refusal that says to wait for it (docs/reference/exit-codes.md).
func TestLockWriteFailureIsNoRefusal(t *testing.T) {
	r := project(t)
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	full := fmt.Errorf("write lock file .git/hgate.lock: %w", syscall.ENOSPC)
	held := &lock.HeldError{PID: 1, Command: "gate", Path: ".git/hgate.lock"}
	for _, c := range []struct {
		lockErr error
		refusal bool
	}{{full, false}, {held, true}} {
		_, err := loop.Run(context.Background(), loop.Options{Env: env, Loop: env.Config.Loop,
			Lock: func(context.Context) (func(), error) { return nil, c.lockErr }})
		var ns *loop.NotStarted
		if got := errors.As(err, &ns); got != c.refusal || !errors.Is(err, c.lockErr) && !c.refusal {
			t.Errorf("lock error %q: loop.Run returned %v (a refusal: %v, want %v)", c.lockErr, err, got, c.refusal)
		}
	}
}
