package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/internal/human"
	"github.com/hgate/hgate/internal/scratch"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/record"
)

// The files a generation's agent writes in its iteration's folder (its message and its
// notes for the next generation): hgate reads them, bounded, and never trusts them.
const (
	messageName = "loop-message.txt"
	notesName   = "notes.md"
	notesBound  = 16 << 10 // of each agent's notes, what reaches learnings.md
	tracesName  = "traces" // the train traces of the commands its socket served
)

// runGenAgent runs agent a of generation g in its worktree and sandbox, with its own
// socket, and returns how it ran.
func (r *runner) runGenAgent(ctx context.Context, g *generation, a *genAgent) (*Iteration, error) {
	dir := r.iterDir(a.Iteration)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	msg, notes := filepath.Join(dir, messageName), filepath.Join(dir, notesName)
	for _, f := range []string{msg, notes} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			return nil, err
		}
	}
	// An attempt's prompt against the best as it stands, with its message and notes files
	// and its place in the generation.
	best, err := r.best()
	if err != nil {
		return nil, err
	}
	in, err := r.promptInput(a.Iteration, 0, best, msg)
	if err != nil {
		return nil, err
	}
	in.Generation, in.AgentIndex, in.Agents, in.NotesFile = g.Number, a.Index, len(g.Agents), notes
	prompt := buildPrompt(in)
	// The commands it sends over its socket run on its worktree, through its generation's
	// watch of hgate's refs (what moved behind hgate's back is put back first: the
	// generation's candidates are then rejected); they write none of hgate's state, so two
	// agents' commands can take turns with the repository lock.
	at := &Worktree{Dir: a.Worktree, Base: g.Base, Traces: filepath.Join(dir, tracesName)}
	serve := r.serveAt(at, func() (refWatch, bool) { return r.genRefs(g), true })
	srv, err := agentapi.Listen(ctx, agentapi.Options{Exec: serve, Status: r.statusOf(a.Iteration), Prefix: scratch.Prefix("hgate-loop-")})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	// In its worktree, its .git file and the workspace are never granted; everywhere
	// else it is hidden what a single agent's sandbox hides (unseen).
	spec := sessionSpec{Phase: "attempt", Dir: dir, Worktree: a.Worktree, Iteration: a.Iteration,
		Timeout: r.cfg.AttemptTimeout, Server: srv, Message: msg, Prompt: func(string) string { return prompt },
		Jail: jailSpec{Worktree: a.Worktree, Protected: []string{filepath.Join(a.Worktree, ".git"), string(r.ws)}, Files: []string{msg, notes},
			Hidden: r.jails().trainHidden(filepath.Join(dir, tracesName))},
		Env: []string{"HGATE_NOTES_FILE=" + notes, "HGATE_GENERATION=" + strconv.Itoa(g.Number), "HGATE_AGENT_INDEX=" + strconv.Itoa(a.Index)},
		// Its generation reaps the orphans once every agent has ended (another agent
		// may still run).
		KeepOrphans: true, Agent: a.Index}
	slot := r.slot(a, "")
	ss, res, out, err := r.runSession(ctx, spec, &slot, nil)
	if err != nil {
		return nil, err // a process of it may live: nothing else runs (fail closed)
	}
	defer ss.close()
	it := candidateIteration(g, a, r.j.Sandbox)
	ranAgent(it, res, out)
	m := slot.meter()
	r.genMu.Lock()
	r.book().sessionSpend(it, m, out) // the run's total takes it when the journal says it ended (endAgent)
	r.genMu.Unlock()
	return it, nil
}

// Worktree is where a command served to one agent of a generation runs: hgate bench,
// gate and guard judge that agent's worktree, as they judge the repository's own for a
// single agent, and write only its traces.
type Worktree struct {
	Dir    string // the agent's linked worktree
	Base   string // the generation's base: Step 0 compares with it
	Traces string // its train traces: iterations/<n>/traces
}

// mergeNotes appends each agent's notes (their first notesBound bytes) to learnings.md,
// once, under a heading naming the agent: the next generation's prompts carry its tail.
func (r *runner) mergeNotes(g *generation) error {
	var b strings.Builder
	for _, a := range g.Agents {
		data, cut, err := statefile.ReadHead(filepath.Join(r.iterDir(a.Iteration), notesName), notesBound)
		text := human.Printable(strings.TrimSpace(string(data)), true)
		if err != nil || text == "" {
			continue
		}
		if cut {
			text += fmt.Sprintf("\n[hgate: the notes are longer than %d bytes; the rest is left out]", notesBound)
		}
		fmt.Fprintf(&b, "\n### Notes of agent %d, generation %d (iteration %d)\n\n%s\n", a.Index, g.Number, a.Iteration, text)
	}
	if b.Len() == 0 {
		return nil
	}
	path := r.ws.Learnings()
	if record.EndsWith(path, b.String()) {
		return nil // a resume after the append, before the journal said so
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// firstLineOf is the first line of a file the agent wrote (its first messageBound bytes).
func firstLineOf(path string) string {
	data, _, err := statefile.ReadHead(path, messageBound)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(firstLine(string(data)))
}
