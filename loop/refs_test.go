package loop

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// refWatch is the one check of refs/hgate/ for the single agent and a generation: taken
// before the agents' phase, refreshed before each served command, ended after it. Each
// case moves hgate's refs as an agent could between take and the check, and reads the
// refs, the tamper list and the journal writes after it.
func TestRefWatch(t *testing.T) {
	const gated, best = gitguard.RefPrefix + "gated", gitguard.RefPrefix + "best"
	cases := []struct {
		name  string
		agent func(t *testing.T, g *gitguard.Repo, c1, c2 plumbing.Hash)
		moved []string // what tamper holds after: the ref names, in order
	}{
		{name: "nothing moved"},
		{name: "moved", agent: func(t *testing.T, g *gitguard.Repo, c1, c2 plumbing.Hash) {
			setRef(t, g, gated, c2, c1)
		}, moved: []string{gated + ": moved"}},
		{name: "deleted and created", agent: func(t *testing.T, g *gitguard.Repo, c1, c2 plumbing.Hash) {
			setRef(t, g, gated, plumbing.ZeroHash, c1)
			setRef(t, g, best, c2, plumbing.ZeroHash)
		}, moved: []string{best + ": ", gated + ": deleted"}},
	}
	for _, c := range cases {
		for _, check := range []string{"end", "refresh"} {
			t.Run(c.name+"/"+check, func(t *testing.T) { refWatchCase(t, check, c.agent, c.moved) })
		}
	}
}

// refWatchCase takes the watch, lets agent move the refs, runs check (end or refresh)
// and reads the refs, tamper, the log and the journal writes after it.
func refWatchCase(t *testing.T, check string, agent func(*testing.T, *gitguard.Repo, plumbing.Hash, plumbing.Hash), moved []string) {
	const gated, best = gitguard.RefPrefix + "gated", gitguard.RefPrefix + "best"
	g, c1, c2 := refsRepo(t)
	setRef(t, g, gated, c1, plumbing.ZeroHash)
	var snap gitguard.RefSnapshot
	var tamper []string
	saves, log := 0, &bytes.Buffer{}
	w := refWatch{mu: &sync.Mutex{}, snap: &snap, tamper: &tamper, who: "iteration 1", agent: "the agent",
		repo: g, check: func() error { return nil }, save: func() error { saves++; return nil }, log: log}
	took := false
	if err := w.take(func() { took = true }); err != nil || !took || saves != 1 || snap[gated] != c1.String() {
		t.Fatalf("take: err %v, also ran %v, saves %d, snapshot %v", err, took, saves, snap)
	}
	if agent != nil {
		agent(t, g, c1, c2)
	}
	nexted := false
	if check == "end" {
		if err := w.end(func() { nexted = true }); err != nil {
			t.Fatal(err)
		}
	} else {
		w.refresh()
	}
	assertTamper(t, tamper, moved, log.String())
	if got, _ := g.Ref(gated); got != c1 {
		t.Errorf("%s is %s after the check, want %s put back", gated, got, c1)
	}
	if got, _ := g.Ref(best); !got.IsZero() {
		t.Errorf("%s is %s after the check, want it removed", best, got)
	}
	// end always closes the phase in one write, without the snapshot; refresh keeps the
	// snapshot and writes only when something was put back.
	wantSaves, wantSnap := 2, false
	if check == "refresh" {
		wantSaves, wantSnap = 1+min(len(moved), 1), true
	}
	if saves != wantSaves || nexted != (check == "end") || (snap != nil) != wantSnap {
		t.Errorf("after %s: %d save(s) (want %d), next ran %v, snapshot kept %v", check, saves, wantSaves, nexted, snap != nil)
	}
}

// refsRepo is a repository with two commits, the values the refs take.
func refsRepo(t *testing.T) (*gitguard.Repo, plumbing.Hash, plumbing.Hash) {
	t.Helper()
	repo := gittest.New(t)
	repo.Write("a", "1\n")
	c1 := plumbing.NewHash(repo.Commit("one"))
	repo.Write("a", "2\n")
	c2 := plumbing.NewHash(repo.Commit("two"))
	g, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return g, c1, c2
}

func setRef(t *testing.T, g *gitguard.Repo, name string, new, old plumbing.Hash) {
	t.Helper()
	if err := g.SetRef(name, new, old); err != nil {
		t.Fatalf("set %s: %v", name, err)
	}
}

// assertTamper checks that tamper names the refs want names (each entry begins with one),
// and that the log says so when any moved.
func assertTamper(t *testing.T, tamper, want []string, log string) {
	t.Helper()
	if len(tamper) != len(want) {
		t.Fatalf("tamper = %q, want %d entries beginning %q", tamper, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(tamper[i], want[i]) {
			t.Errorf("tamper[%d] = %q, want it to begin %q", i, tamper[i], want[i])
		}
	}
	if len(want) > 0 && !strings.Contains(log, "iteration 1: the agent changed hgate's refs behind its back; put back") {
		t.Errorf("log = %q, want the put-back said", log)
	}
}

// TestRefWatchServe: a command served to an agent sees hgate's refs as hgate left them,
// for the single agent and a generation alike; what the command itself moves (the single
// agent's gate writes the ledger) becomes the expected state only where the watch retakes
// it. Without a snapshot the command just runs.
func TestRefWatchServe(t *testing.T) {
	const gated, ledger = gitguard.RefPrefix + "gated", gitguard.RefPrefix + "ledger"
	for _, c := range []struct {
		name         string
		snapshot     bool
		retake       bool
		wantTamper   int  // entries put back before the command ran
		wantLedger   bool // the command's ledger is in the snapshot after it
		wantSaves    int
		wantGatedNow bool // refs/hgate/gated put back to c1 before the command
	}{
		{name: "single agent", snapshot: true, retake: true, wantTamper: 1, wantLedger: true, wantSaves: 3, wantGatedNow: true},
		{name: "generation", snapshot: true, retake: false, wantTamper: 1, wantSaves: 2, wantGatedNow: true},
		{name: "no snapshot", snapshot: false, retake: true, wantSaves: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, c1, c2 := refsRepo(t)
			setRef(t, g, gated, c1, plumbing.ZeroHash)
			var snap gitguard.RefSnapshot
			var tamper []string
			saves := 0
			w := refWatch{mu: &sync.Mutex{}, snap: &snap, tamper: &tamper, who: "iteration 1", agent: "the agent",
				repo: g, check: func() error { return nil }, save: func() error { saves++; return nil }, log: &bytes.Buffer{}}
			if c.snapshot {
				if err := w.take(nil); err != nil {
					t.Fatal(err)
				}
			}
			setRef(t, g, gated, c2, c1) // behind hgate's back, before the command
			var seen plumbing.Hash
			w.serve(func() {
				seen, _ = g.Ref(gated)
				setRef(t, g, ledger, c2, plumbing.ZeroHash) // the command's own write
			}, c.retake)
			if (seen == c1) != c.wantGatedNow {
				t.Errorf("the command saw %s at %s, want put back before it: %v", gated, seen, c.wantGatedNow)
			}
			_, inSnap := snap[ledger]
			if len(tamper) != c.wantTamper || inSnap != c.wantLedger || saves != c.wantSaves {
				t.Errorf("tamper %q (want %d), ledger in snapshot %v (want %v), %d saves (want %d)", tamper, c.wantTamper, inSnap, c.wantLedger, saves, c.wantSaves)
			}
		})
	}
}
