package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/loop"
	"github.com/hgate/hgate/workspace"
)

// stateCmd gives a human the gate's own state as kept in git (refs/hgate/ledger).
type stateCmd struct {
	Log     stateLogCmd     `cmd:"" help:"Show the history of hgate's state files as kept in the ledger, newest first."`
	Restore stateRestoreCmd `cmd:"" help:"Rewrite the workspace's state files from the ledger and put refs/hgate/gated and refs/hgate/best back, undoing edits hgate did not make; a loop run whose resume was refused may then be resumed."`
	Accept  stateAcceptCmd  `cmd:"" help:"Keep the state files as they are now, recording the edit in the ledger as a manual one (receipts excepted); a loop run whose resume was refused may then be resumed."`
	Rebase  stateRebaseCmd  `cmd:"" help:"Take HEAD as the new gated commit on purpose (after committing hgate.yaml or another file the agent must not change) and accept the carried paths as they are."`
}

type stateLogCmd struct {
	Max int `short:"n" default:"20" help:"Show at most this many entries (0: all)."`
}

func (c *stateLogCmd) Run(g *Globals, env *gate.Env) error {
	entries, err := ledger.Open(env.Repo, env.Config.WorkspaceDir()).Log(c.Max)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.printJSON(ledger.LogJSONOf(entries))
	}
	if len(entries) == 0 {
		fmt.Fprintf(g.stdout, "the ledger %s is empty: run hgate prepare\n", gitguard.LedgerRef)
	}
	for _, e := range entries {
		fmt.Fprintf(g.stdout, "%s  %s  %s  [%s]\n", e.Hash.String()[:7], e.When.UTC().Format("2006-01-02 15:04:05"), e.Message, strings.Join(e.Changed, ", "))
	}
	// The history is shown either way: it is where a human looks when the anchors moved.
	return gate.CheckAnchors(env.Repo, g.stderr)
}

type stateRestoreCmd struct{}

func (c *stateRestoreCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "state restore")
	if err != nil {
		return err
	}
	defer release()
	restored, err := ledger.Open(env.Repo, env.Config.WorkspaceDir()).Restore()
	if err != nil {
		return err
	}
	if err := g.approveResume(env); err != nil {
		return err
	}
	return g.listFiles("restored from the ledger", restored)
}

type stateAcceptCmd struct{}

func (c *stateAcceptCmd) Help() string {
	return `Records the workspace's state files (suite.json, results.tsv, train_results.json, split.json) as they are now as a new ledger entry, "manual edit: FILES": the way to keep an edit you made on purpose. Each file is first read as the commands read it: one they could not read is refused, naming file, line and field, and nothing is recorded.

Receipts (workspace/receipts/*.json) are the gate's own verdicts on a tree and only hgate gate writes them: a changed, added or removed receipt is never accepted. The other files are, and the receipts are named (exit 2); run "hgate state restore" to put them back.`
}

func (c *stateAcceptCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "state accept")
	if err != nil {
		return err
	}
	defer release()
	accepted, err := env.AcceptState("")
	if err != nil && accepted == nil {
		return err
	}
	if err == nil {
		if err := g.approveResume(env); err != nil {
			return err
		}
	}
	// Files accepted beside refused receipts are listed, then the receipts named.
	if lerr := g.listFiles("accepted as a manual edit", accepted); lerr != nil {
		return lerr
	}
	return err
}

// approveResume lets a loop run whose resume was refused (its journal's anchors could not
// be checked) be resumed, now that a human has restored or accepted the state.
func (g *Globals) approveResume(env *gate.Env) error {
	id, err := loop.ApproveResume(workspace.Dir(env.Config.WorkspaceDir()))
	if err == nil && id != "" {
		fmt.Fprintf(g.stderr, "hgate: loop run %s may be resumed: hgate loop --resume sets its unchecked attempt aside, never gates it\n", id)
	}
	return err
}

func (g *Globals) listFiles(what string, files []string) error {
	if g.JSON {
		return g.printJSON(stateFilesJSON{Files: nonNil(files)})
	}
	if len(files) == 0 {
		fmt.Fprintln(g.stdout, "the state files already match the ledger; nothing to do")
		return nil
	}
	for _, f := range files {
		fmt.Fprintf(g.stdout, "%s: %s\n", what, f)
	}
	return nil
}

// stateRebaseCmd moves the baseline on purpose: HEAD becomes the gated commit.
type stateRebaseCmd struct{}

func (c *stateRebaseCmd) Help() string {
	return `Marks HEAD as the gated commit (refs/hgate/gated): the commit hgate reads hgate.yaml from and the file guard compares against, so everything committed up to HEAD is trusted from then on. Check "git log refs/hgate/gated..HEAD" first.

Use it after committing a change the agent is not allowed to make: hgate.yaml (a new allow list, benchmark or clean_room.carry), .pre-commit-config.yaml, lefthook.yml, a benchmark file. Use it too when hgate stops because refs/hgate/gated was moved outside hgate and HEAD is the baseline you want (otherwise put the ref back with the git update-ref command hgate printed).

It also hashes the paths clean_room.carry names (as hgate.yaml at HEAD lists them) and accepts them as they are now, and puts refs/hgate/best back where hgate last put it. The rebase is one ledger entry, "manual rebase: ...", shown by hgate state log. It takes the repository lock.`
}

func (c *stateRebaseCmd) adoptsHead() bool { return true }

func (c *stateRebaseCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "state rebase")
	if err != nil {
		return err
	}
	defer release()
	rep, err := gate.Rebase(env)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.printJSON(rep.JSON())
	}
	was := "was " + gate.ShortOrNone(rep.Previous)
	if rep.Previous == rep.Head {
		was = "unchanged"
	}
	fmt.Fprintf(g.stdout, "%s: now HEAD %s (%s); recorded in the ledger as a manual rebase\n", gitguard.GatedRef, rep.Head.String()[:7], was)
	if rep.BestRestored && rep.Best.IsZero() {
		fmt.Fprintf(g.stdout, "%s: deleted (hgate never set it)\n", gitguard.BestRef)
	} else if rep.BestRestored {
		fmt.Fprintf(g.stdout, "%s: put back at %s, where hgate last put it\n", gitguard.BestRef, gate.ShortOrNone(rep.Best))
	}
	if !rep.CarryNamed {
		fmt.Fprintln(g.stdout, "clean_room.carry: nothing carried")
	} else {
		fmt.Fprintf(g.stdout, "clean_room.carry: accepted %d file(s) as they are now\n", len(rep.Carry))
	}
	return nil
}
