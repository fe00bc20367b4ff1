package gitguard_test

import (
	"testing"

	"github.com/hgate/hgate/gitguard"
)

// TestPreloadIndex: a check given the index read ahead (Repo.PreloadIndex) judges that
// read, exactly as a check that reads the index itself would have then; the read is
// taken once, so a second check reads the index again; and a preload is not taken for
// another index file (Options.IndexFile).
func TestPreloadIndex(t *testing.T) {
	r := newProject(t)
	r.Write("benchmark.py", "score = 2\n")
	r.Write("extra.py", "x\n")
	r.Git("add", "extra.py")
	g, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := gitguard.Options{Allow: allow, MapIndex: true}
	want := summary(check(t, r, opts))
	if want != "benchmark.py:modified\nextra.py:added\n" {
		t.Fatalf("without a preload:\n%s", want)
	}
	opts.Preload = g.PreloadIndex()
	gitguard.WaitPreload(opts.Preload)
	r.Git("rm", "-q", "--cached", "extra.py") // after the read ahead: not seen by its check
	vs, err := g.Check(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(vs); got != want {
		t.Errorf("with the index read ahead:\n%swant\n%s", got, want)
	}
	again := summary(check(t, r, opts))
	if again != "benchmark.py:modified\nextra.py:untracked\n" {
		t.Errorf("a second check with the same preload did not read the index again:\n%s", again)
	}
	r.Git("add", "extra.py")
	other := gitguard.Options{Allow: allow, MapIndex: true, IndexFile: ".git/index2", Preload: g.PreloadIndex()}
	gitguard.WaitPreload(other.Preload)
	r.Git("read-tree", "--index-output=.git/index2", "HEAD") // without extra.py
	if got := summary(check(t, r, other)); got != "benchmark.py:modified\nextra.py:untracked\n" {
		t.Errorf("a preload of the repository's index was taken for another index file:\n%s", got)
	}
}
