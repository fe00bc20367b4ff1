package gitguard

// Every ref hgate keeps is named here, and nowhere else: the other packages import these
// names. They are the names the main worktree stores them under; a linked worktree's are
// mapped by Repo (RefName, worktreerefs.go), so callers never spell the worktree's own.
const (
	// RefPrefix holds every ref hgate trusts: the anchors, the ledger, the harness, the
	// saved attempts (the loop checks all of them around the agent's phase).
	RefPrefix = "refs/hgate/"
	// GatedRef holds the last commit that passed the gate: the guard's base, and the
	// commit hgate.yaml is read from.
	GatedRef = RefPrefix + "gated"
	// BestRef holds the commit with the best recorded val_score.
	BestRef = RefPrefix + "best"
	// LedgerRef's commits hold the workspace's state files (package ledger).
	LedgerRef = RefPrefix + "ledger"
	// HarnessRef holds the agent's artifacts as each qualification found them, with its
	// report: one commit per qualification, so `git log refs/hgate/harness` is the
	// harness's history and the branch holds only gated changes.
	HarnessRef = RefPrefix + "harness"
	// AttemptsRef is the prefix of the refs holding the loop's rejected attempts
	// (AttemptsRef + "<run>/<n>").
	AttemptsRef = RefPrefix + "attempts/"
	// worktreeRefs is where a linked worktree's own refs live (worktreerefs.go).
	worktreeRefs = RefPrefix + "worktrees/"
)
