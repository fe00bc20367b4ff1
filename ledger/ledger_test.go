package ledger

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// state is a workspace as hgate writes it.
func state() map[string][]byte {
	tasks := make([]string, 12)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("%q", fmt.Sprintf("task_%03d", i))
	}
	return map[string][]byte{
		"suite.json": []byte("{\n  \"tasks\": [" + strings.Join(tasks, ", ") + "],\n  \"threshold\": 0.8,\n  \"last_results\": {}\n}\n"),
		"results.tsv": []byte("iteration\tval_score\tcommit\tevals_passed\tevals_total\ttimestamp\n" +
			"0\t0.5000\tbaseline\t5\t10\t2024-01-01T00:00:00+00:00\n" +
			"1\t0.7000\tabc1234\t7\t10\t2024-01-02T00:00:00+00:00\n"),
		"train_results.json": []byte("{\n  \"split\": \"train\",\n  \"timestamp\": \"2024-01-01T00:00:00+00:00\",\n  \"results\": {\"task_001\": 1.0, \"task_002\": 0.0}\n}\n"),
		"split.json":         []byte("{\n  \"seed\": 42,\n  \"train\": [\"task_001\", \"task_002\"],\n  \"test\": [\"task_003\"]\n}\n"),
		"receipts/aaa.json":  []byte("{\"tree\": \"aaa\", \"val_score\": 0.7}\n"),
		"receipts/bbb.json":  []byte("{\"tree\": \"bbb\", \"val_score\": 0.6}\n"),
	}
}

type fixture struct {
	g  *gittest.Repo
	l  *Ledger
	ws string // workspace directory
}

func newFixture(t testing.TB) *fixture {
	g := gittest.New(t)
	r, err := gitguard.Open(g.Dir)
	if err != nil {
		t.Fatalf("%v", err)
	}
	ws := g.Path("workspace")
	return &fixture{g: g, l: Open(r, ws), ws: ws}
}

// prepared is a fixture whose workspace holds state() written by Commit,
// twice: were the files new in the tip, deleting one would look like a crash
// before the write and be rolled forward (see TestCrashBetweenLedgerAndWrite).
func prepared(t testing.TB) *fixture {
	f := newFixture(t)
	if err := f.l.Commit(Update{Message: "prepare: baseline", Files: state()}); err != nil {
		t.Fatalf("%v", err)
	}
	if err := f.l.Commit(Update{Message: "gate: tree aaa pass, promoted 0", Files: state()}); err != nil {
		t.Fatalf("%v", err)
	}
	return f
}

func (f *fixture) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.ws, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// diskMatches fails unless the workspace holds exactly want.
func (f *fixture) diskMatches(t *testing.T, want map[string][]byte) {
	t.Helper()
	d, err := f.l.scan()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, df := range d.files {
		got[name] = string(df.data)
	}
	w := map[string]string{}
	for name, data := range want {
		if data != nil {
			w[name] = string(data)
		}
	}
	if !maps.Equal(got, w) {
		t.Errorf("workspace holds %q\nwant %q", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(w)))
	}
}

func TestApplyThenVerify(t *testing.T) {
	f := newFixture(t)
	if rec, err := f.l.Verify(); err != nil || rec != nil {
		t.Fatalf("fresh workspace: %v, %v", rec, err)
	}
	want := state()
	if err := f.l.Commit(Update{Message: "prepare: baseline", Files: want}); err != nil {
		t.Fatal(err)
	}
	f.diskMatches(t, want)
	if rec, err := f.l.Verify(); err != nil || rec != nil {
		t.Fatalf("after Commit: %v, %v", rec, err)
	}
	// Untracked files in the workspace are the agent's to write.
	for _, p := range []string{"learnings.md", "traces/latest/t.log", "runs/1/summary.json", "receipts/notes.txt", "receipts/.hidden.json", "receipts/sub/x.json"} {
		f.g.Write("workspace/"+p, "anything")
	}
	change := map[string][]byte{"receipts/ccc.json": []byte("{}\n"), "receipts/aaa.json": nil, "suite.json": []byte("{}\n")}
	if err := f.l.Commit(Update{Message: "gate: tree ccc pass, promoted 0", Files: change}); err != nil {
		t.Fatal(err)
	}
	maps.Copy(want, change)
	f.diskMatches(t, want)
	if rec, err := f.l.Verify(); err != nil || rec != nil {
		t.Fatalf("after second Commit: %v, %v", rec, err)
	}
	log, err := f.l.Log(0)
	if err != nil || len(log) != 2 || log[0].Message != "gate: tree ccc pass, promoted 0" ||
		!slices.Equal(log[0].Changed, []string{"receipts/aaa.json", "receipts/ccc.json", "suite.json"}) {
		t.Errorf("log: %+v, %v", log, err)
	}
}

func TestApplyRejects(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		msg     string
		changes map[string][]byte
		want    string
	}{
		{"x", map[string][]byte{"learnings.md": {}}, "learnings.md: not a state file"},
		{"x", map[string][]byte{"receipts/a/b.json": {}}, "receipts/a/b.json: not a state file"},
		{"x", map[string][]byte{"../suite.json": {}}, "../suite.json: not a state file"},
		{" \n", map[string][]byte{"suite.json": {}}, "needs a message"},
	}
	for _, tt := range tests {
		if err := f.l.Commit(Update{Message: tt.msg, Files: tt.changes}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Commit %q: %v, want %q", slices.Collect(maps.Keys(tt.changes)), err, tt.want)
		}
	}
	if tip, _ := f.l.Tip(); !tip.IsZero() {
		t.Error("a rejected Commit made a commit")
	}
}

// TestAttacks tampers with the state the way an agent could; each must be a
// Drift naming the file, and Restore must undo it.
func TestAttacks(t *testing.T) {
	tests := []struct {
		name   string
		attack func(f *fixture)
		file   string // Change.File expected
		kind   string
		line   string // expected in the message
	}{
		{"suite emptied", func(f *fixture) {
			f.g.Write("workspace/suite.json", "{\n  \"tasks\": [],\n  \"threshold\": 0.8,\n  \"last_results\": {}\n}\n")
		}, "suite.json", KindModified, "workspace/suite.json: modified outside hgate (tasks: 12 → 0 entries)"},
		{"threshold lowered", func(f *fixture) {
			f.g.Write("workspace/suite.json", strings.Replace(string(state()["suite.json"]), "0.8", "0", 1))
		}, "suite.json", KindModified, "workspace/suite.json: modified outside hgate (threshold: 0.8 → 0)"},
		{"best row deleted", func(f *fixture) {
			s := string(state()["results.tsv"])
			f.g.Write("workspace/results.tsv", s[:strings.LastIndex(s[:len(s)-1], "\n")+1])
		}, "results.tsv", KindModified, "workspace/results.tsv: modified outside hgate (rows: 2 → 1; first difference at line 3)"},
		{"best row lowered", func(f *fixture) {
			f.g.Write("workspace/results.tsv", strings.Replace(string(state()["results.tsv"]), "0.7000", "0.1000", 1))
		}, "results.tsv", KindModified, "workspace/results.tsv: modified outside hgate (first difference at line 3)"},
		{"forged row appended", func(f *fixture) {
			f.g.Write("workspace/results.tsv", string(state()["results.tsv"])+"2\t0.0100\tdef5678\t0\t10\t2024-01-03T00:00:00+00:00\n")
		}, "results.tsv", KindModified, "workspace/results.tsv: modified outside hgate (rows: 2 → 3; appended at line 4)"},
		{"train results edited", func(f *fixture) {
			f.g.Write("workspace/train_results.json", strings.Replace(string(state()["train_results.json"]), "0.0", "1.0", 1))
		}, "train_results.json", KindModified, "workspace/train_results.json: modified outside hgate (results: 1 of 2 entries changed)"},
		{"split rewritten", func(f *fixture) {
			f.g.Write("workspace/split.json", "not json")
		}, "split.json", KindModified, "workspace/split.json: modified outside hgate (no longer valid JSON)"},
		{"state file replaced by a symlink", func(f *fixture) {
			f.g.Write("elsewhere.json", string(state()["suite.json"]))
			f.g.Symlink("../elsewhere.json", "workspace/suite.json")
		}, "suite.json", KindSymlink, "workspace/suite.json: replaced by a symlink (a state file must be a regular file)"},
		{"receipts folder replaced by a symlink", func(f *fixture) {
			f.g.Write("decoy/aaa.json", string(state()["receipts/aaa.json"]))
			f.g.Write("decoy/bbb.json", string(state()["receipts/bbb.json"]))
			f.g.Symlink("../decoy", "workspace/receipts")
		}, "receipts", KindSymlink, "workspace/receipts: replaced by a symlink"},
		{"state file replaced by a folder", func(f *fixture) {
			f.g.Remove("workspace/split.json")
			f.g.Write("workspace/split.json/x", "x")
		}, "split.json", KindNotRegular, "workspace/split.json: replaced by something that is not a regular file"},
		{"file deleted", func(f *fixture) {
			f.g.Remove("workspace/results.tsv")
		}, "results.tsv", KindDeleted, "workspace/results.tsv: deleted outside hgate"},
		{"receipt deleted", func(f *fixture) {
			f.g.Remove("workspace/receipts/bbb.json")
		}, "receipts/bbb.json", KindDeleted, "workspace/receipts/bbb.json: deleted outside hgate"},
		{"receipt forged", func(f *fixture) {
			f.g.Write("workspace/receipts/fff.json", "{\"tree\": \"fff\", \"val_score\": 1.0}\n")
		}, "receipts/fff.json", KindAdded, "workspace/receipts/fff.json: added outside hgate"},
		{"ledger ref deleted", func(f *fixture) {
			f.g.Git("update-ref", "-d", gitguard.LedgerRef)
		}, "suite.json", KindNoLedger, "the ledger refs/hgate/ledger is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := prepared(t)
			tt.attack(f)
			rec, err := f.l.Verify()
			var d *Drift
			if !errors.As(err, &d) {
				t.Fatalf("Verify = %v, %v; want a drift", rec, err)
			}
			if rec != nil {
				t.Errorf("recovered %q from an attack", rec)
			}
			i := slices.IndexFunc(d.Changes, func(c Change) bool { return c.File == tt.file })
			if i < 0 || d.Changes[i].Kind != tt.kind {
				t.Fatalf("changes %+v, want %s %s", d.Changes, tt.file, tt.kind)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.line) {
				t.Errorf("message lacks %q:\n%s", tt.line, msg)
			}
			if !strings.Contains(msg, "hgate state accept") {
				t.Errorf("message gives no way out:\n%s", msg)
			}
			if tt.kind == KindNoLedger {
				if _, err := f.l.Restore(); err == nil || !strings.Contains(err.Error(), "nothing to restore from") {
					t.Errorf("Restore without a ledger: %v", err)
				}
				return
			}
			if !strings.Contains(msg, "hgate state restore") {
				t.Errorf("message does not offer restore:\n%s", msg)
			}
			changed, err := f.l.Restore()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(changed, "workspace/"+tt.file) {
				t.Errorf("Restore changed %q, want %s among them", changed, tt.file)
			}
			if rec, err := f.l.Verify(); err != nil || rec != nil {
				t.Fatalf("after Restore: %v, %v", rec, err)
			}
			f.diskMatches(t, state())
		})
	}
}

// TestCrashBetweenLedgerAndWrite runs Commit's first step only, as a crash
// would leave it, and expects the next Verify to finish the write.
func TestCrashBetweenLedgerAndWrite(t *testing.T) {
	tests := []struct {
		name    string
		fresh   bool              // no ledger before the crashing Commit
		changes map[string][]byte // what the crashing Commit records
		written []string          // of which these reached the disk
		want    []string          // recovered
	}{
		{"first apply, nothing written", true, state(), nil,
			[]string{"workspace/receipts/aaa.json", "workspace/receipts/bbb.json", "workspace/results.tsv", "workspace/split.json", "workspace/suite.json", "workspace/train_results.json"}},
		// Commit writes in name order, so a crash leaves the first files written.
		{"first apply, half written", true, state(), []string{"receipts/aaa.json", "receipts/bbb.json"},
			[]string{"workspace/results.tsv", "workspace/split.json", "workspace/suite.json", "workspace/train_results.json"}},
		{"gate pass, nothing written", false, map[string][]byte{"suite.json": []byte("{}\n"), "receipts/ccc.json": []byte("{}\n")}, nil,
			[]string{"workspace/receipts/ccc.json", "workspace/suite.json"}},
		{"delete not done", false, map[string][]byte{"results.tsv": []byte("x\n"), "suite.json": nil}, []string{"results.tsv"},
			[]string{"workspace/suite.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f *fixture
			want := map[string][]byte{}
			if tt.fresh {
				f = newFixture(t)
			} else {
				f = prepared(t)
				want = state()
			}
			// Commit makes the workspace folder before it records.
			if err := os.MkdirAll(f.ws, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := f.l.record("crashing", tt.changes); err != nil {
				t.Fatal(err)
			}
			part := map[string][]byte{}
			for _, name := range tt.written {
				part[name] = tt.changes[name]
			}
			if err := f.l.write(part); err != nil {
				t.Fatal(err)
			}
			rec, err := f.l.Verify()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rec, tt.want) {
				t.Errorf("recovered %q, want %q", rec, tt.want)
			}
			maps.Copy(want, tt.changes)
			f.diskMatches(t, want)
			if rec, err := f.l.Verify(); err != nil || rec != nil {
				t.Errorf("second Verify: %v, %v", rec, err)
			}
		})
	}
}

// TestCrashThenEvents: commits that change no file (a read-only command recording a look
// at the final split) on top of a crash's ledger commit do not hide the crash: the next
// Verify still finishes the write, and a file changed after a whole write is still drift.
func TestCrashThenEvents(t *testing.T) {
	f := prepared(t)
	if err := f.l.record("gate: tree ccc pass", map[string][]byte{"suite.json": []byte("{}\n"), "receipts/ccc.json": []byte("{}\n")}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"final: shown by hgate status", "final: shown by hgate report"} {
		if err := f.l.Commit(Update{Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := f.l.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"workspace/receipts/ccc.json", "workspace/suite.json"}; !slices.Equal(rec, want) {
		t.Errorf("recovered %q, want %q", rec, want)
	}
	want := state()
	want["suite.json"], want["receipts/ccc.json"] = []byte("{}\n"), []byte("{}\n")
	f.diskMatches(t, want)
	// Written whole and noted: one more event, then a file put back as it was is drift.
	if err := f.l.Commit(Update{Message: "final: shown by hgate status"}); err != nil {
		t.Fatal(err)
	}
	f.g.Write("workspace/suite.json", string(state()["suite.json"]))
	rec, err = f.l.Verify()
	var d *Drift
	if !errors.As(err, &d) || rec != nil || !slices.Equal(d.Files(), []string{"suite.json"}) {
		t.Errorf("Verify after a whole write: %q, %v; want suite.json drifted", rec, err)
	}
}

// TestCrashPlusTampering: a half-finished write is rolled forward even when
// another file drifts, and the drift is still reported.
func TestCrashPlusTampering(t *testing.T) {
	f := prepared(t)
	if err := f.l.record("gate: tree ccc pass", map[string][]byte{"receipts/ccc.json": []byte("{}\n")}); err != nil {
		t.Fatal(err)
	}
	f.g.Write("workspace/split.json", "{}\n")
	rec, err := f.l.Verify()
	var d *Drift
	if !errors.As(err, &d) || !slices.Equal(d.Files(), []string{"split.json"}) {
		t.Fatalf("Verify: %v", err)
	}
	if !slices.Equal(rec, []string{"workspace/receipts/ccc.json"}) {
		t.Errorf("recovered %q", rec)
	}
}

func TestAccept(t *testing.T) {
	f := prepared(t)
	f.g.Write("workspace/suite.json", "{\"tasks\": [], \"threshold\": 0.5, \"last_results\": {}}\n")
	f.g.Remove("workspace/receipts/aaa.json")
	f.g.Write("workspace/receipts/new.json", "{}\n")
	if _, err := f.l.Verify(); err == nil {
		t.Fatal("no drift after a hand edit")
	}
	// Receipts are the gate's verdicts: a removed or added one is refused by name; the
	// suite is accepted all the same.
	names, err := f.l.Accept("alice", nil)
	if err == nil || !strings.Contains(err.Error(), "workspace/receipts/aaa.json: deleted outside hgate") ||
		!strings.Contains(err.Error(), "workspace/receipts/new.json: added outside hgate") || strings.Contains(err.Error(), "suite.json") {
		t.Fatalf("Accept with changed receipts: %v", err)
	}
	want := []string{"workspace/suite.json"}
	if !slices.Equal(names, want) {
		t.Errorf("accepted %q, want %q", names, want)
	}
	var d *Drift
	if _, err := f.l.Verify(); !errors.As(err, &d) || !slices.Equal(d.Files(), []string{"receipts/aaa.json", "receipts/new.json"}) {
		t.Fatalf("after a partial Accept: %v", err)
	}
	if _, err := f.l.Restore(); err != nil {
		t.Fatal(err)
	}
	if rec, err := f.l.Verify(); err != nil || rec != nil {
		t.Fatalf("after Accept: %v, %v", rec, err)
	}
	log, _ := f.l.Log(1)
	if got := log[0].Message; got != "manual edit: workspace/suite.json (by alice)" {
		t.Errorf("message %q", got)
	}
	if names, err := f.l.Accept("alice", nil); err != nil || names != nil {
		t.Errorf("second Accept: %q, %v", names, err)
	}
	if log2, _ := f.l.Log(0); len(log2) != 3 {
		t.Errorf("nothing to accept still made a commit: %d commits", len(log2))
	}
	// Restore now brings back the accepted content, not the original.
	f.g.Write("workspace/suite.json", "{}")
	if _, err := f.l.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, "suite.json"); !strings.Contains(got, "0.5") {
		t.Errorf("restored suite.json %q, want the accepted one", got)
	}
}

func TestAcceptRefusesSymlinks(t *testing.T) {
	for _, target := range []string{"workspace/suite.json", "workspace/receipts"} {
		f := prepared(t)
		f.g.Write("decoy", "{}")
		f.g.Symlink(f.g.Path("decoy"), target)
		_, err := f.l.Accept("", nil)
		if err == nil || !strings.Contains(err.Error(), target+" is a symlink") || !strings.Contains(err.Error(), "must be a regular file") {
			t.Errorf("Accept with %s a symlink: %v", target, err)
		}
		if log, _ := f.l.Log(0); len(log) != 2 {
			t.Errorf("refused Accept made a commit")
		}
	}
}

func TestAcceptAdoptsWithoutLedger(t *testing.T) {
	f := newFixture(t)
	for name, data := range state() {
		f.g.Write("workspace/"+name, string(data))
	}
	var d *Drift
	if _, err := f.l.Verify(); !errors.As(err, &d) || !d.NoLedger || len(d.Changes) != len(state()) {
		t.Fatalf("Verify: %v", err)
	}
	names, err := f.l.Accept("", nil)
	if err != nil || len(names) != len(state()) {
		t.Fatalf("Accept: %q, %v", names, err)
	}
	if rec, err := f.l.Verify(); err != nil || rec != nil {
		t.Fatalf("after Accept: %v, %v", rec, err)
	}
	log, _ := f.l.Log(0)
	if len(log) != 1 || !strings.HasPrefix(log[0].Message, "manual edit: workspace/receipts/aaa.json, ") || strings.Contains(log[0].Message, "(by") {
		t.Errorf("log %+v", log)
	}
}

// TestConcurrentLedgers: two hgate processes writing at once both land.
func TestConcurrentLedgers(t *testing.T) {
	f := newFixture(t)
	const n = 6
	var wg sync.WaitGroup
	for _, w := range []string{"x", "y"} {
		r, err := gitguard.Open(f.g.Dir)
		if err != nil {
			t.Fatal(err)
		}
		l := Open(r, f.ws)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				name := fmt.Sprintf("receipts/%s%d.json", w, i)
				if err := l.Commit(Update{Message: "gate: " + name, Files: map[string][]byte{name: []byte(name)}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	log, err := f.l.Log(0)
	if err != nil || len(log) != 2*n {
		t.Fatalf("%d commits, %v; want %d", len(log), err, 2*n)
	}
	if rec, err := f.l.Verify(); err != nil || rec != nil {
		t.Fatalf("Verify: %v, %v", rec, err)
	}
	files, _ := f.l.repo.FilesAt(log[0].Hash)
	maps.DeleteFunc(files, func(name string, _ []byte) bool { return isMeta(name) })
	if len(files) != 2*n {
		t.Errorf("tip holds %d files, want %d", len(files), 2*n)
	}
}

func TestTracked(t *testing.T) {
	for name, want := range map[string]bool{
		"suite.json": true, "results.tsv": true, "train_results.json": true, "split.json": true, "baseline.json": true,
		"receipts/abc.json": true, "receipts/.abc.json": false, "receipts/.json": false,
		"receipts/a/b.json": false, "receipts/abc.txt": false, "learnings.md": false,
		"traces/x.json": false, "runs/1/summary.json": false, "Suite.json": false,
	} {
		if Tracked(name) != want {
			t.Errorf("Tracked(%q) = %v", name, !want)
		}
	}
}

// BenchmarkVerify times the check every command starts with, on a
// workspace with 200 receipts, against a baseline that only reads the files.
func BenchmarkVerify(b *testing.B) {
	f := newFixture(b)
	st := state()
	for i := range 200 {
		st[fmt.Sprintf("receipts/%040x.json", i)] = []byte(fmt.Sprintf("{\n  \"tree\": \"%040x\",\n  \"val_score\": 0.5\n}\n", i))
	}
	if err := f.l.Commit(Update{Message: "prepare", Files: st}); err != nil {
		b.Fatal(err)
	}
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.l.Verify(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
	b.Run("read-only-baseline", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.l.scan(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
}

func TestDriftMessageIsBounded(t *testing.T) {
	f := prepared(t)
	for i := range 30 {
		f.g.Write(fmt.Sprintf("workspace/receipts/forged%02d.json", i), "{}")
	}
	var d *Drift
	if _, err := f.l.Verify(); !errors.As(err, &d) || len(d.Changes) != 30 {
		t.Fatalf("Verify: %v", err)
	}
	msg := d.Error()
	if n := strings.Count(msg, "\n"); n != maxLines+2 || !strings.Contains(msg, "... and 10 more") {
		t.Errorf("%d lines:\n%s", n, msg)
	}
}

// TestDeletionIsNotACrash: a crash between the ledger commit and the writes leaves the
// first files (in name order) written and the rest as they were, inside a workspace folder
// Commit made. A missing file that does not fit that — the whole workspace removed, or a
// file deleted while one written after it is there — was deleted outside hgate: drift,
// never "finished a write".
func TestDeletionIsNotACrash(t *testing.T) {
	fresh := func(t *testing.T) *fixture {
		f := newFixture(t)
		if err := f.l.Commit(Update{Message: "prepare: baseline", Files: state()}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	drifted := func(t *testing.T, f *fixture, kind string, files ...string) *Drift {
		t.Helper()
		rec, err := f.l.Verify()
		var d *Drift
		if !errors.As(err, &d) {
			t.Fatalf("Verify: %v, want drift", err)
		}
		if rec != nil {
			t.Errorf("recovered %q, want nothing (not a crash)", rec)
		}
		if !slices.Equal(d.Files(), files) {
			t.Errorf("drift %q, want %q", d.Files(), files)
		}
		for _, c := range d.Changes {
			if c.Kind != kind {
				t.Errorf("%s: %s, want %s", c.File, c.Kind, kind)
			}
		}
		return d
	}
	t.Run("workspace removed after the first apply", func(t *testing.T) {
		f := fresh(t)
		if err := os.RemoveAll(f.ws); err != nil {
			t.Fatal(err)
		}
		d := drifted(t, f, KindDeleted, "receipts/aaa.json", "receipts/bbb.json", "results.tsv", "split.json", "suite.json", "train_results.json")
		if !d.Gone || !strings.Contains(d.Error(), "hgate prepare --reset") {
			t.Errorf("Gone %v, error %q: want the way to start over", d.Gone, d.Error())
		}
		if _, err := os.Lstat(f.ws); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Verify rewrote the workspace: %v", err)
		}
	})
	t.Run("file deleted before a later one", func(t *testing.T) {
		f := fresh(t)
		f.g.Remove("workspace/split.json")
		d := drifted(t, f, KindDeleted, "split.json")
		if d.Gone || strings.Contains(d.Error(), "--reset") {
			t.Errorf("one file deleted reads as a removed workspace: %q", d.Error())
		}
	})
	t.Run("file changed back before a later one", func(t *testing.T) {
		f := prepared(t)
		old := f.read(t, "suite.json")
		if err := f.l.Commit(Update{Message: "gate: tree ccc pass", Files: map[string][]byte{"suite.json": []byte("{}\n"), "train_results.json": []byte("{}\n")}}); err != nil {
			t.Fatal(err)
		}
		f.g.Write("workspace/suite.json", old)
		drifted(t, f, KindModified, "suite.json")
	})
	t.Run("last file deleted after the write was noted", func(t *testing.T) {
		// Commit noted that it wrote every file: the order of writes is not needed.
		f := fresh(t)
		f.g.Remove("workspace/train_results.json")
		drifted(t, f, KindDeleted, "train_results.json")
	})
	t.Run("last file deleted without the note reads as a crash", func(t *testing.T) {
		// Without the note (a repository from before it, a git folder hgate could not
		// write) nothing tells this from a kill before the last write: it is rolled
		// forward (rewritten from the ledger, never adopted) and reported.
		f := fresh(t)
		if err := os.Remove(f.l.writtenPath()); err != nil {
			t.Fatal(err)
		}
		f.g.Remove("workspace/train_results.json")
		rec, err := f.l.Verify()
		if err != nil || !slices.Equal(rec, []string{"workspace/train_results.json"}) {
			t.Fatalf("Verify: %q, %v", rec, err)
		}
		f.diskMatches(t, state())
	})
	t.Run("workspace removed with nothing recorded is still new", func(t *testing.T) {
		f := newFixture(t)
		if rec, err := f.l.Verify(); err != nil || rec != nil {
			t.Fatalf("Verify: %q, %v", rec, err)
		}
	})
}
