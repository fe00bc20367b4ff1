package gate

import "sync"

// Trust is the set of trees whose receipts the loop's own gates wrote, the one fact the
// loop's reuse of a test-split score rests on. The loop makes one per run and passes it
// to its own gates (Options.Trust) alone: they run after the agent's processes are gone,
// so a score among these was never obtained while the agent was alive. A receipt on disk
// that is not in it (a gate the agent asked for, or one from another process) is never
// reused. Safe for concurrent use.
type Trust struct {
	mu    sync.Mutex
	trees map[string]bool
}

// NewTrust returns an empty set.
func NewTrust() *Trust { return &Trust{trees: map[string]bool{}} }

// Wrote reports whether a gate given t wrote the receipt of tree.
func (t *Trust) Wrote(tree string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.trees[tree]
}

func (t *Trust) add(tree string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.trees[tree] = true
}
