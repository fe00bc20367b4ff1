package gate

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/split"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// prepare's phases, each tested on its own. The phases that read the repository get one
// of ten tasks, t01..t10, that pass when agent.sh names them (t01..t05 at first), run
// outside the clean room; the phases that run tasks get a fake runner.

// prepRepo is a repository ready for prepare, not prepared.
func prepRepo(t *testing.T, extraYAML string) (*gittest.Repo, *Env) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	var ids []string
	for i := 1; i <= 10; i++ {
		ids = append(ids, fmt.Sprintf("t%02d", i))
	}
	repo := gittest.New(t)
	repo.WriteFiles(map[string]string{
		"hgate.yaml": "allow: [agent.sh]\nbenchmark:\n  tasks: {file: tasks.txt}\n  run: [sh, check.sh, \"{task}\"]\n  concurrency: 2\n  task_timeout: 1m\n" + extraYAML,
		".gitignore": "/workspace/\n",
		"tasks.txt":  strings.Join(ids, "\n") + "\n",
		"check.sh":   checkScript,
		"agent.sh":   strings.Join(ids[:5], "\n") + "\n",
	})
	repo.Commit("init")
	return repo, openEnv(t, repo)
}

func openEnv(t *testing.T, repo *gittest.Repo) *Env {
	t.Helper()
	r, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(r, "hgate.yaml", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Config: cfg, Repo: r}
}

// fakeRun answers each request from reward(id, call), call counting requests from 1; a
// nil reward is a null with reason "timed out after 1m0s" when timeout(id, call).
type fakeRun struct {
	calls  int
	reward func(id string, call int) *float64
	reason func(id string, call int) string
	asked  [][]string
}

func (f *fakeRun) Run(_ context.Context, req benchmark.Request) (*benchmark.Outcome, error) {
	f.calls++
	f.asked = append(f.asked, slices.Clone(req.Tasks))
	out := &benchmark.Outcome{Results: map[string]benchmark.Result{}}
	for _, id := range req.Tasks {
		r := benchmark.Result{Task: id, Reward: f.reward(id, f.calls)}
		if f.reason != nil {
			r.Reason = f.reason(id, f.calls)
		}
		out.Results[id] = r
	}
	return out, nil
}

func ids(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("t%02d", i))
	}
	return out
}

// passFirst: tasks t01..t05 pass, the others fail, every call.
func passFirst(id string, _ int) *float64 {
	if id <= "t05" {
		return reward(1)
	}
	return reward(0)
}

func TestPrepareReadInputs(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, repo *gittest.Repo, e *Env)
		err       string
		prepared  bool
		needTrace bool
	}{
		{name: "fresh", needTrace: true},
		{name: "prepared", setup: func(t *testing.T, _ *gittest.Repo, e *Env) { mustPrepare(t, e) }, prepared: true},
		{name: "traces removed", setup: func(t *testing.T, _ *gittest.Repo, e *Env) {
			mustPrepare(t, e)
			os.RemoveAll(e.ws().Traces("baseline"))
		}, prepared: true, needTrace: true},
		{name: "workspace not ignored", setup: func(t *testing.T, repo *gittest.Repo, _ *Env) {
			repo.Write(".gitignore", "")
			repo.Commit("unignore")
		}, err: "is not ignored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, e := prepRepo(t, "")
			if tt.setup != nil {
				tt.setup(t, repo, e)
			}
			p := &prep{e: e, rep: &PrepareReport{}, c: changes{}}
			err := p.readInputs(context.Background())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (p.st.split != nil) != tt.prepared || p.needTraces != tt.needTrace || p.head.IsZero() || p.tree.IsZero() {
				t.Fatalf("state %+v, need traces %v, head %v", p.st, p.needTraces, p.head)
			}
		})
	}
}

func mustPrepare(t *testing.T, e *Env) *PrepareReport {
	t.Helper()
	rep, err := Prepare(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestPrepareComplete: a workspace with every file ends prepare; one missing file does not.
func TestPrepareComplete(t *testing.T) {
	tests := []struct {
		name   string
		remove string // a workspace path to remove after prepare
		done   bool
	}{
		{"every file", "", true},
		{"no learnings.md", workspace.Learnings, false},
		{"no baseline traces", "traces/baseline", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, "")
			mustPrepare(t, e)
			if tt.remove != "" {
				os.RemoveAll(e.ws().Path(tt.remove))
			}
			p := &prep{e: e, rep: &PrepareReport{}, c: changes{}}
			if err := p.readInputs(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := p.complete(context.Background()); err != nil {
				t.Fatal(err)
			}
			if p.done != tt.done || tt.done && (len(p.rep.Train)+len(p.rep.Test) != 10) {
				t.Fatalf("done %v, report %+v", p.done, p.rep)
			}
		})
	}
}

// TestPrepareListTasks: every listed task without a split, else what the missing files need.
func TestPrepareListTasks(t *testing.T) {
	sp := &split.Split{Train: []string{"t01", "t02"}, Test: []string{"t03"}}
	rows := []record.Row{{Commit: "baseline"}}
	train := &suite.TrainResults{}
	tests := []struct {
		name       string
		st         *state
		needTraces bool
		tasksFile  string
		want       []string
		err        string
	}{
		{name: "no split: every task", st: &state{}, want: ids(10)},
		{name: "no split, one task", st: &state{}, tasksFile: "t01\n", err: "at least 2"},
		{name: "split, nothing missing", st: &state{split: sp, rows: rows, train: train}},
		{name: "no row 0: the test tasks", st: &state{split: sp, train: train}, want: []string{"t03"}},
		{name: "no train results: the train tasks", st: &state{split: sp, rows: rows}, want: []string{"t01", "t02"}},
		{name: "no traces: the train tasks", st: &state{split: sp, rows: rows, train: train}, needTraces: true, want: []string{"t01", "t02"}},
		{name: "neither", st: &state{split: sp}, want: []string{"t03", "t01", "t02"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, e := prepRepo(t, "")
			if tt.tasksFile != "" {
				repo.Write("tasks.txt", tt.tasksFile)
			}
			rm, err := e.rooms().Open(plumbing.ZeroHash)
			if err != nil {
				t.Fatal(err)
			}
			defer rm.Close()
			p := &prep{e: e, st: tt.st, needTraces: tt.needTraces, rm: rm}
			err = p.listTasks(context.Background())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(p.tasks, tt.want) {
				t.Fatalf("tasks %q (%v), want %q", p.tasks, err, tt.want)
			}
		})
	}
}

// runUntil runs prepare's phases before the named one, as prepare would.
func runUntil(t *testing.T, p *prep, name string) {
	t.Helper()
	i := slices.IndexFunc(preparePhases, func(ph preparePhase) bool { return ph.name == name })
	if i < 0 {
		t.Fatalf("no phase %q", name)
	}
	if err := p.runPhases(context.Background(), preparePhases[:i]); err != nil {
		t.Fatal(err)
	}
}

func newPrep(e *Env) *prep { return &prep{e: e, rep: &PrepareReport{}, c: changes{}} }

// TestPrepareRunBaseline: one run, and a second for the tasks that timed out.
func TestPrepareRunBaseline(t *testing.T) {
	tests := []struct {
		name    string
		reward  func(id string, call int) *float64
		calls   int
		passed  int
		retried []string
	}{
		{"one run", passFirst, 1, 5, nil},
		{"t06 times out once", func(id string, call int) *float64 {
			if id == "t06" && call == 1 {
				return nil
			}
			return passFirst(id, call)
		}, 2, 5, []string{"t06"}},
		{"t01 times out twice", func(id string, call int) *float64 {
			if id == "t01" {
				return nil
			}
			return passFirst(id, call)
		}, 2, 4, []string{"t01"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, "")
			f := &fakeRun{reward: tt.reward, reason: func(id string, call int) string {
				if tt.reward(id, call) == nil {
					return "timed out after 1m0s"
				}
				return ""
			}}
			p := newPrep(e)
			p.tasks, p.run = ids(10), f
			defer p.close()
			if err := p.runBaseline(context.Background()); err != nil {
				t.Fatal(err)
			}
			var retried []string
			for id := range p.retried {
				retried = append(retried, id)
			}
			if f.calls != tt.calls || p.rep.Passed != tt.passed || p.rep.Tasks != 10 || !slices.Equal(retried, tt.retried) {
				t.Fatalf("calls %d, passed %d, retried %q", f.calls, p.rep.Passed, retried)
			}
		})
	}
}

// TestPrepareTrialsAuto: auto runs the test tasks autoRuns times in all (the train tasks
// once) and decides; with no test task to run, the train tasks run once more; set trials
// and a workspace that has train results decide nothing.
func TestPrepareTrialsAuto(t *testing.T) {
	sp := &split.Split{Train: ids(7), Test: []string{"t08", "t09", "t10"}}
	flip := func(id string, call int) *float64 {
		if id == "t09" && call == 3 {
			return reward(1)
		}
		return passFirst(id, call)
	}
	tests := []struct {
		name      string
		yaml      string
		tasks     []string
		reward    func(id string, call int) *float64
		hasTrain  bool
		decided   bool
		differing int
		noisy     bool
		asked     [][]string // the further runs' tasks
	}{
		{name: "same four times: one trial", tasks: ids(10), reward: passFirst, decided: true,
			asked: [][]string{sp.Test, sp.Test, sp.Test}},
		{name: "t09 differs in run 3: trials", tasks: ids(10), reward: flip, decided: true, differing: 1, noisy: true,
			asked: [][]string{sp.Test, sp.Test, sp.Test}},
		{name: "no test task runs: the train tasks once more", tasks: ids(7), reward: passFirst, decided: true,
			asked: [][]string{ids(7)}},
		{name: "trials set in hgate.yaml", yaml: "gate: {trials: {min: 1, max: 1}}\n", tasks: ids(10), reward: flip},
		{name: "train results exist", tasks: ids(10), reward: flip, hasTrain: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, tt.yaml)
			f := &fakeRun{reward: tt.reward}
			p := newPrep(e)
			p.st, p.sp, p.tasks, p.run = &state{}, sp, tt.tasks, f
			if tt.hasTrain {
				p.st.train = &suite.TrainResults{}
			}
			p.out, _ = f.Run(context.Background(), benchmark.Request{Tasks: p.tasks})
			if err := p.trialsAuto(context.Background()); err != nil {
				t.Fatal(err)
			}
			if (p.choice != nil) != tt.decided || tt.decided && p.choice.Differing != tt.differing || e.Config.Gate.Noisy() != tt.noisy {
				t.Fatalf("choice %+v, noisy %v", p.choice, e.Config.Gate.Noisy())
			}
			if !slices.EqualFunc(f.asked[1:], tt.asked, slices.Equal) {
				t.Errorf("further runs %q, want %q", f.asked[1:], tt.asked)
			}
			if tt.decided && (p.rep.Trials == nil || *p.rep.Trials.Differing != tt.differing) {
				t.Errorf("report %+v", p.rep.Trials)
			}
		})
	}
}

// TestPrepareMakeSplit: a new split from the baseline (null tasks left out, refused when
// most are null); an existing one is kept.
func TestPrepareMakeSplit(t *testing.T) {
	old := &split.Split{Train: []string{"t01"}, Test: []string{"t02"}}
	tests := []struct {
		name     string
		existing *split.Split
		nulls    int // t01.. null
		excluded int
		err      string
	}{
		{name: "new split", excluded: 0},
		{name: "two nulls left out", nulls: 2, excluded: 2},
		{name: "existing split kept", existing: old},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, "")
			p := newPrep(e)
			p.st, p.tasks = &state{split: tt.existing}, ids(10)
			p.out, _ = (&fakeRun{reward: func(id string, c int) *float64 {
				if id <= fmt.Sprintf("t%02d", tt.nulls) {
					return nil
				}
				return passFirst(id, c)
			}}).Run(context.Background(), benchmark.Request{Tasks: p.tasks})
			err := p.makeSplit(context.Background())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || p.c[workspace.Split] != nil {
					t.Fatalf("err %v, want %q; split written %v", err, tt.err, p.c[workspace.Split] != nil)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.existing != nil {
				if p.sp != tt.existing || p.c[workspace.Split] != nil {
					t.Fatalf("split %+v, written %v", p.sp, p.c[workspace.Split] != nil)
				}
				return
			}
			if len(p.rep.Excluded) != tt.excluded || len(p.sp.Train)+len(p.sp.Test) != 10-tt.excluded || p.c[workspace.Split] == nil {
				t.Fatalf("split %+v, excluded %q", p.sp, p.rep.Excluded)
			}
		})
	}
}

// TestPrepareCheckRuns: a baseline where every task's command could not run is refused.
func TestPrepareCheckRuns(t *testing.T) {
	tests := []struct {
		name   string
		reason func(id string) string
		err    string
	}{
		{"tasks ran", func(string) string { return "" }, ""},
		{"every task not found", func(string) string { return "exit status 127" }, "every task exited with status 127"},
		{"one task not found", func(id string) string {
			if id == "t01" {
				return "exit status 127"
			}
			return ""
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, "")
			p := newPrep(e)
			p.tasks = ids(10)
			p.out, _ = (&fakeRun{reward: func(string, int) *float64 { return reward(0) },
				reason: func(id string, _ int) string { return tt.reason(id) }}).Run(context.Background(), benchmark.Request{Tasks: p.tasks})
			err := p.checkRuns(context.Background())
			if (err != nil) != (tt.err != "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}

// TestPrepareTestTrials: with trials a new split's test tasks run trials.max times in
// all; the unrounded val_score is taken only when row 0 is still to be written.
func TestPrepareTestTrials(t *testing.T) {
	sp := &split.Split{Train: []string{"t01", "t06"}, Test: []string{"t02", "t07"}}
	tests := []struct {
		name     string
		yaml     string
		st       *state
		trials   int // per test task
		mean     *float64
		runCalls int
	}{
		{name: "one trial, new split", st: &state{}, mean: reward(0.5)},
		{name: "three trials, new split", yaml: "gate: {trials: {min: 3, max: 3}}\n", st: &state{}, trials: 3, mean: reward(0.5)},
		{name: "three trials, split exists", yaml: "gate: {trials: {min: 3, max: 3}}\n", st: &state{split: sp}, mean: reward(0.5)},
		{name: "row 0 exists", st: &state{split: sp, rows: []record.Row{{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, tt.yaml)
			rm, err := e.rooms().Open(plumbing.ZeroHash)
			if err != nil {
				t.Fatal(err)
			}
			defer rm.Close()
			p := newPrep(e)
			p.st, p.sp, p.rm = tt.st, sp, rm
			p.out, _ = (&fakeRun{reward: passFirst}).Run(context.Background(), benchmark.Request{Tasks: ids(10)})
			if err := p.testTrials(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := len(p.trials["t02"]); got != tt.trials {
				t.Errorf("%d trial(s) of t02, want %d", got, tt.trials)
			}
			if (p.mean == nil) != (tt.mean == nil) || p.mean != nil && *p.mean != *tt.mean {
				t.Errorf("mean %v, want %v", p.mean, tt.mean)
			}
		})
	}
}

// TestPrepareStateFiles: train_results.json and baseline.json, suite.json and row 0, each
// only when missing.
func TestPrepareStateFiles(t *testing.T) {
	sp := &split.Split{Train: []string{"t01", "t06"}, Test: []string{"t02", "t07"}}
	all := []string{workspace.TrainResults, workspace.Baseline, workspace.Suite, workspace.Results}
	tests := []struct {
		name  string
		st    *state
		want  []string
		score float64
	}{
		{"nothing yet", &state{}, all, 0.5},
		{"train results exist", &state{train: &suite.TrainResults{}}, []string{workspace.Suite, workspace.Results}, 0.5},
		{"suite exists", &state{suite: &suite.Suite{}}, []string{workspace.TrainResults, workspace.Baseline, workspace.Results}, 0.5},
		{"row 0 exists", &state{rows: []record.Row{{ValScore: 0.25}}}, []string{workspace.TrainResults, workspace.Baseline, workspace.Suite}, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, "")
			p := newPrep(e)
			p.st, p.sp = tt.st, sp
			p.out, _ = (&fakeRun{reward: passFirst}).Run(context.Background(), benchmark.Request{Tasks: ids(10)})
			for _, ph := range []func(*prep, context.Context) error{(*prep).trainResults, (*prep).suiteAndRow} {
				if err := ph(p, context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, n := range all {
				if p.c[n] != nil {
					got = append(got, n)
				}
			}
			if !slices.Equal(got, tt.want) || p.rep.ValScore != tt.score {
				t.Fatalf("files %q, val_score %v; want %q, %v", got, p.rep.ValScore, tt.want, tt.score)
			}
		})
	}
}

// TestPrepareCommitAndFiles: the ledger commit and the files it does not keep, on a fresh
// repository and on a prepared one missing learnings.md or its traces.
func TestPrepareCommitAndFiles(t *testing.T) {
	tests := []struct {
		name    string
		remove  string
		created []string
	}{
		{"fresh", "", []string{"workspace/results.tsv", "workspace/split.json", "workspace/suite.json", "workspace/train_results.json", "workspace/traces/baseline", "workspace/learnings.md"}},
		{"learnings.md removed", workspace.Learnings, []string{"workspace/learnings.md"}},
		{"traces removed", "traces/baseline", []string{"workspace/traces/baseline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, e := prepRepo(t, "")
			if tt.remove != "" {
				mustPrepare(t, e)
				os.RemoveAll(e.ws().Path(tt.remove))
			}
			before, _ := repo.TryGit("rev-parse", "-q", "--verify", "refs/hgate/ledger")
			p := newPrep(e)
			defer p.close()
			runUntil(t, p, "commit")
			for _, ph := range []func(*prep, context.Context) error{(*prep).commit, (*prep).tracesAndLearnings} {
				if err := ph(p, context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			after, _ := repo.TryGit("rev-parse", "refs/hgate/ledger")
			if !slices.Equal(p.rep.Created, tt.created) || (before == after) != (tt.remove != "") {
				t.Fatalf("created %q (want %q); ledger %s → %s", p.rep.Created, tt.created, before, after)
			}
			for _, n := range tt.created {
				if !exists(repo.Path(n)) {
					t.Errorf("%s not written", n)
				}
			}
		})
	}
}

// TestPrepareRefuseNulls: most tasks null is refused whether the split is new or found;
// with a split found, only the train tasks' traces are kept.
func TestPrepareRefuseNulls(t *testing.T) {
	found := &split.Split{Train: ids(7), Test: []string{"t08", "t09", "t10"}}
	tests := []struct {
		name  string
		sp    *split.Split
		nulls []string
		err   string
		kept  []string // traces in traces/refused
	}{
		{name: "new split, two nulls"},
		{name: "new split, six nulls", nulls: []string{"t01", "t02", "t03", "t08", "t09", "t10"}, err: "6 of 10 tasks had a null baseline reward",
			kept: []string{"t01", "t02", "t03", "t08", "t09", "t10"}},
		{name: "split found, five nulls", sp: found, nulls: []string{"t01", "t02", "t03", "t08", "t09"}},
		{name: "split found, six nulls", sp: found, nulls: []string{"t01", "t02", "t03", "t08", "t09", "t10"}, err: "6 of 10 tasks had a null baseline reward",
			kept: []string{"t01", "t02", "t03"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, "")
			p := newPrep(e)
			p.st, p.tasks, p.traceTmp = &state{split: tt.sp}, ids(10), t.TempDir()
			for _, id := range p.tasks {
				os.WriteFile(p.traceTmp+"/"+id+".log", []byte("out\n"), 0o644)
			}
			p.out, _ = (&fakeRun{reward: func(id string, c int) *float64 {
				if slices.Contains(tt.nulls, id) {
					return nil
				}
				return passFirst(id, c)
			}}).Run(context.Background(), benchmark.Request{Tasks: p.tasks})
			err := p.refuseNulls(context.Background())
			if (err != nil) != (tt.err != "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
			var kept []string
			entries, _ := os.ReadDir(e.ws().Traces("refused"))
			for _, en := range entries {
				kept = append(kept, strings.TrimSuffix(en.Name(), ".log"))
			}
			if !slices.Equal(kept, tt.kept) {
				t.Errorf("traces kept %q, want %q", kept, tt.kept)
			}
		})
	}
}

// TestPrepareRefuseNeverRan: every task failing with the same status and the same last
// line (its id aside), with no reward printed, is refused, quoting the line; any
// difference, a printed reward, silence or the flag accept it.
func TestPrepareRefuseNeverRan(t *testing.T) {
	cdFail := func(id string) (string, string) {
		return "sh: 1: cd: can't cd to exercise/" + id + "\n", "exit status 2"
	}
	tests := []struct {
		name string
		ok   bool // ZeroBaselineOK
		task func(id string) (trace, reason string)
		err  bool
	}{
		{name: "cd typo", task: cdFail, err: true},
		{name: "cd typo, flag given", ok: true, task: cdFail},
		{name: "different last lines", task: func(id string) (string, string) {
			return "--- FAIL: Test" + strings.Repeat("x", len(id)%3+int(id[2]-'0')) + "\n", "exit status 1"
		}},
		{name: "different statuses", task: func(id string) (string, string) {
			tr, _ := cdFail(id)
			return tr, "exit status " + string(id[2])
		}},
		{name: "a reward printed", task: func(id string) (string, string) { return "0\n", "" }},
		{name: "silent", task: func(id string) (string, string) { return "", "exit status 1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := prepRepo(t, "")
			p := newPrep(e)
			p.opts.ZeroBaselineOK = tt.ok
			p.st, p.tasks, p.traceTmp = &state{}, ids(4), t.TempDir()
			p.sp = &split.Split{Train: ids(2), Test: []string{"t03", "t04"}}
			p.out = &benchmark.Outcome{Results: map[string]benchmark.Result{}}
			for _, id := range p.tasks {
				trace, reason := tt.task(id)
				if trace != "" {
					trace = "building\n" + trace
				}
				os.WriteFile(p.traceTmp+"/"+id+".log", []byte(trace), 0o644)
				p.out.Results[id] = benchmark.Result{Task: id, Reward: reward(0), Reason: reason}
			}
			err := p.refuseNeverRan(context.Background())
			if (err != nil) != tt.err {
				t.Fatalf("err %v, want one: %v", err, tt.err)
			}
			if err != nil && (!strings.Contains(err.Error(), "\n  sh: 1: cd: can't cd to exercise/t01\n") || !strings.Contains(err.Error(), ZeroBaselineFlag)) {
				t.Errorf("refusal does not quote the line or name the flag:\n%v", err)
			}
		})
	}
}
