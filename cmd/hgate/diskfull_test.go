//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hgate/hgate/internal/statefile"
)

// The full-disk campaign (script state_full_disk_campaign.txtar): the prepared repository
// of the script is copied onto a small tmpfs, which is also the commands' TMPDIR (for gate
// and the loop once more, not), and each of gate, record, bench and a one-iteration loop
// runs with K bytes left free, for K from 0 up in steps of diskStep until the command
// succeeds. After each run the disk is freed and the campaign checks the repository and the
// files, not hgate's messages: what was recorded before is all there (results.tsv, split.json and baseline.json as they were or
// grown, the ledger, gated commit and branch descendants of what they were, every receipt
// and held-out record), every ref points at an object that is there (git fsck), the readers
// (status, guard, state log) answer, a failure exited 2 naming a path with "no space left on
// device", and the next command (the same one; the loop with --resume) succeeds and leaves
// nothing behind.

// diskStep is the campaign's step in free bytes: tmpfs counts whole pages.
const diskStep = 4 << 10

// diskMaxRounds bounds the rounds of one command, should one never succeed.
const diskMaxRounds = 160

// canMountTmpfs is the [tmpfs] condition: root, and a tmpfs mounts here (not in a container
// that refuses it, and not where mount(8) is missing).
var canMountTmpfs = sync.OnceValue(func() bool {
	if os.Geteuid() != 0 {
		return false
	}
	dir, err := os.MkdirTemp("", "hgate-tmpfs-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).Run() != nil {
		return false
	}
	return exec.Command("umount", dir).Run() == nil
})

type diskRound struct {
	name  string
	setup [][]string // hgate commands run with the disk not full, before the fill
	cmd   []string   // the command under test, run with the disk full
	next  []string   // the next command, with space again
	// tmpElsewhere puts TMPDIR (the clean room) off the full disk, as where /tmp is a
	// file system of its own: the first write refused is then hgate's state, not the room.
	tmpElsewhere bool
}

var diskRounds = []diskRound{
	{name: "gate", cmd: []string{"gate"}, next: []string{"gate"}},
	{name: "gate, TMPDIR elsewhere", cmd: []string{"gate"}, next: []string{"gate"}, tmpElsewhere: true},
	{name: "record", setup: [][]string{{"gate"}}, cmd: []string{"record"}, next: []string{"record"}},
	{name: "bench", cmd: []string{"bench"}, next: []string{"bench"}},
	{name: "loop", cmd: []string{"loop", "--iterations", "1", "--no-sandbox"},
		next: []string{"loop", "--iterations", "1", "--no-sandbox", "--resume"}},
	{name: "loop, TMPDIR elsewhere", cmd: []string{"loop", "--iterations", "1", "--no-sandbox"},
		next: []string{"loop", "--iterations", "1", "--no-sandbox", "--resume"}, tmpElsewhere: true},
}

// diskFullCampaign is `diskfull SIZE`: the campaign on a tmpfs of SIZE (mount's size=).
func diskFullCampaign(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: diskfull SIZE")
	}
	mnt, err := os.MkdirTemp(ts.Getenv("TMPDIR"), "disk-")
	ts.Check(err)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+args[0], "tmpfs", mnt).CombinedOutput(); err != nil {
		ts.Fatalf("mount a tmpfs: %v\n%s", err, out)
	}
	ts.Defer(func() { exec.Command("umount", "-l", mnt).Run() })
	d := &diskCampaign{campaign: campaign{ts: ts}, mnt: mnt, proj: filepath.Join(mnt, "p"), places: map[string]bool{}}
	oldTmp := ts.Getenv("TMPDIR")
	defer ts.Setenv("TMPDIR", oldTmp)
	elsewhere := filepath.Join(oldTmp, "elsewhere")
	ts.Check(os.MkdirAll(elsewhere, 0o755))
	ts.Setenv("HGATE_CAMPAIGN_SPENT", filepath.Join(oldTmp, "spent"))
	rounds, failed := 0, 0
	for _, r := range diskRounds {
		ts.Setenv("TMPDIR", filepath.Join(mnt, "tmp"))
		if r.tmpElsewhere {
			ts.Setenv("TMPDIR", elsewhere)
		}
		k := 0
		for ; k < diskMaxRounds && !d.round(r, int64(k)*diskStep); k++ {
			failed++
		}
		rounds += k + 1
		if k == 0 {
			// Not one write refused: the fill did not fill, and the campaign checked nothing.
			d.inconsistent = append(d.inconsistent, r.name+": succeeded with 0 bytes free")
		}
		ts.Logf("%s: stopped by the full disk with up to %d KiB free, at %d places", r.name, max(k-1, 0)*diskStep>>10, len(d.places))
		for _, p := range slices.Sorted(maps.Keys(d.places)) {
			ts.Logf("  %s", p)
		}
		clear(d.places)
	}
	ts.Logf("full-disk campaign: %d rounds, %d commands stopped by the full disk, %d inconsistencies", rounds, failed, len(d.inconsistent)+len(d.leftovers))
	for _, s := range append(d.inconsistent, d.leftovers...) {
		ts.Logf("  %s", s)
	}
	if len(d.inconsistent)+len(d.leftovers) > 0 {
		ts.Fatalf("the full-disk campaign found %d inconsistencies and %d leftovers", len(d.inconsistent), len(d.leftovers))
	}
}

type diskCampaign struct {
	campaign
	mnt, proj string
	places    map[string]bool // where a command met the full disk, names normalised
}

// round copies the repository onto the disk, runs r's setup, fills the disk to free bytes,
// runs r.cmd, frees the disk, checks, runs r.next and checks again. It reports whether r.cmd
// succeeded.
func (d *diskCampaign) round(r diskRound, free int64) (succeeded bool) {
	what := fmt.Sprintf("%s with %d KiB free", r.name, free>>10)
	d.restore()
	d.ts.Check(os.WriteFile(d.ts.Getenv("HGATE_CAMPAIGN_SPENT"), nil, 0o644))
	for _, s := range r.setup {
		if d.run(s) != 0 {
			d.ts.Fatalf("%s: setup hgate %s: %s", what, strings.Join(s, " "), d.ts.ReadFile("stderr"))
		}
	}
	before := d.snapshot()
	fill := filepath.Join(d.mnt, "fill")
	d.fill(fill, free)
	code := d.run(r.cmd)
	stderr := d.ts.ReadFile("stderr")
	d.ts.Check(os.Remove(fill))
	d.judgeExit(what, code, stderr)
	for _, m := range summaryNamed.FindAllStringSubmatch(stderr, -1) {
		if _, err := os.Stat(m[1]); err != nil {
			d.inconsistent = append(d.inconsistent, fmt.Sprintf("%s: the loop's last line names %s: %v", what, m[1], err))
		}
	}
	d.check(what, before)
	if code == 0 {
		d.checkLeftoversIn(what)
		return true
	}
	after := d.snapshot()
	if c := d.run(r.next); c != 0 {
		d.inconsistent = append(d.inconsistent, fmt.Sprintf("%s, then hgate %s with space: exit %d: %s", what, strings.Join(r.next, " "), c, strings.TrimSpace(d.ts.ReadFile("stderr"))))
	}
	d.check(what+", then the next command", after)
	d.checkLeftoversIn(what + ", then the next command")
	d.checkSpent(what + ", then the next command")
	return false
}

// checkSpent compares the spend the loop's runs recorded (summary.json) with what the
// agent reported: the script's bot prints HGATE_COST_USD=0.01 and notes each run in
// $HGATE_CAMPAIGN_SPENT, off the full disk, so a report the disk could not hold is counted.
func (d *diskCampaign) checkSpent(what string) {
	noted, _ := os.ReadFile(d.ts.Getenv("HGATE_CAMPAIGN_SPENT"))
	want := float64(bytes.Count(noted, []byte("\n"))) / 100
	var got float64
	runs, _ := filepath.Glob(filepath.Join(d.proj, "workspace", "runs", "*", "summary.json"))
	for _, s := range runs {
		spent, err := summarySpend(s)
		if err != nil {
			d.inconsistent = append(d.inconsistent, fmt.Sprintf("%s: %v", what, err))
		}
		got += spent
	}
	if math.Abs(got-want) > 1e-9 {
		d.inconsistent = append(d.inconsistent, fmt.Sprintf("%s: the runs recorded a spend of $%v, the agent reported $%v", what, got, want))
	}
}

// summaryNamed is the summary.json the loop's last line names.
var summaryNamed = regexp.MustCompile(`(?m)^\[loop\] stopped: .*; summary: (\S+)$`)

// diskFullLine is an error that names a path and says the disk is full.
var diskFullLine = regexp.MustCompile(`\S*/\S*: (\S+: )?no space left on device`)

// judgeExit: 0 is done; a full disk is 2, hgate could not answer (never 1, a "no"), with a
// line naming the file.
func (d *diskCampaign) judgeExit(what string, code int, stderr string) {
	switch {
	case code == 0:
	case code != 2:
		d.inconsistent = append(d.inconsistent, fmt.Sprintf("%s: exit %d (a full disk is exit 2): %s", what, code, strings.TrimSpace(stderr)))
	case !diskFullLine.MatchString(stderr):
		d.inconsistent = append(d.inconsistent, fmt.Sprintf("%s: exit 2 without a line naming the file and saying the disk is full: %s", what, strings.TrimSpace(stderr)))
	case strings.Contains(stderr, "wait for the other hgate"):
		// No other hgate ever runs in the campaign: the advice would send the user astray.
		d.inconsistent = append(d.inconsistent, fmt.Sprintf("%s: says to wait for another hgate, and none runs: %s", what, strings.TrimSpace(stderr)))
	default:
		d.places[placeName.ReplaceAllString(diskFullLine.FindString(stderr), "*")] = true
	}
}

// placeName is what differs between two failures at one place: a temporary name, a hash.
var placeName = regexp.MustCompile(`[0-9a-f]{40,64}|[0-9]+|tmp_obj_\w+|hgate-\w+`)

// run runs hgate ARGS in the copy and returns its exit code (-1: killed by a signal).
func (d *diskCampaign) run(args []string) int {
	err := d.ts.Exec("hgate", append([]string{"-C", d.proj}, args...)...)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	d.ts.Fatalf("hgate %s: %v", strings.Join(args, " "), err)
	return 0
}

// restore empties the disk and copies the script's repository onto it.
func (d *diskCampaign) restore() {
	entries, err := os.ReadDir(d.mnt)
	d.ts.Check(err)
	for _, e := range entries {
		d.ts.Check(os.RemoveAll(filepath.Join(d.mnt, e.Name())))
	}
	d.ts.Check(os.MkdirAll(d.proj, 0o755))
	d.ts.Check(os.MkdirAll(filepath.Join(d.mnt, "tmp"), 0o755))
	work := d.ts.Getenv("WORK")
	entries, err = os.ReadDir(work)
	d.ts.Check(err)
	for _, e := range entries {
		if e.Name() == ".home" || e.Name() == ".tmp" {
			continue
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(work, e.Name()), d.proj).CombinedOutput(); err != nil {
			d.ts.Fatalf("copy %s: %v\n%s", e.Name(), err, out)
		}
	}
}

// fill writes a file that leaves free bytes free on the disk (in whole pages).
func (d *diskCampaign) fill(name string, free int64) {
	var st syscall.Statfs_t
	d.ts.Check(syscall.Statfs(d.mnt, &st))
	n := int64(st.Bavail)*int64(st.Bsize) - free
	f, err := os.Create(name)
	d.ts.Check(err)
	defer f.Close()
	zero := make([]byte, 1<<20)
	for n > 0 {
		w, err := f.Write(zero[:min(n, int64(len(zero)))])
		n -= int64(w)
		if err != nil {
			d.ts.Fatalf("fill the disk: %v", err)
		}
	}
	d.ts.Check(f.Sync())
}

// diskState is what a round must not lose: the state files that only grow or stay, the
// receipts and held-out records, and the refs that only move forward.
type diskState struct {
	files map[string][]byte // workspace state files that only grow (results.tsv) or stay
	kept  []string          // receipts and held-out records, by path
	refs  map[string]string // ref → commit
}

var diskGrowing = []string{"workspace/results.tsv", "workspace/split.json", "workspace/baseline.json"}

func (d *diskCampaign) snapshot() diskState {
	s := diskState{files: map[string][]byte{}, refs: map[string]string{}}
	for _, f := range diskGrowing {
		if data, err := os.ReadFile(filepath.Join(d.proj, f)); err == nil {
			s.files[f] = data
		}
	}
	for _, g := range []string{"workspace/receipts/*.json", ".git/hgate/heldout/*.json"} {
		m, _ := filepath.Glob(filepath.Join(d.proj, g))
		s.kept = append(s.kept, m...)
	}
	for _, ref := range []string{"HEAD", "refs/hgate/ledger", "refs/hgate/gated", "refs/hgate/best"} {
		if out, err := exec.Command("git", "-C", d.proj, "rev-parse", "--verify", "-q", ref).Output(); err == nil {
			s.refs[ref] = strings.TrimSpace(string(out))
		}
	}
	return s
}

// check compares the repository now with before and runs git fsck and the readers.
func (d *diskCampaign) check(what string, before diskState) {
	bad := func(format string, args ...any) {
		d.inconsistent = append(d.inconsistent, what+": "+fmt.Sprintf(format, args...))
	}
	for f, old := range before.files {
		now, err := os.ReadFile(filepath.Join(d.proj, f))
		switch {
		case err != nil:
			bad("%s: %v", f, err)
		case f == "workspace/results.tsv" && !bytes.HasPrefix(now, old):
			bad("%s lost or changed rows:\n%s\nnow:\n%s", f, old, now)
		case f != "workspace/results.tsv" && !bytes.Equal(now, old):
			bad("%s changed", f)
		}
	}
	for _, p := range before.kept {
		if _, err := os.Stat(p); err != nil {
			bad("%v", err)
		}
	}
	now := d.snapshot()
	for ref, old := range before.refs {
		cur, ok := now.refs[ref]
		if !ok {
			bad("%s is gone (it was %s)", ref, old)
		} else if exec.Command("git", "-C", d.proj, "merge-base", "--is-ancestor", old, cur).Run() != nil {
			bad("%s moved from %s to %s, which does not descend from it", ref, old, cur)
		}
	}
	if out, err := exec.Command("git", "-C", d.proj, "fsck", "--no-dangling", "--no-progress").CombinedOutput(); err != nil || len(out) > 0 {
		bad("git fsck: %v\n%s", err, out)
	}
	for _, r := range [][]string{{"status"}, {"guard"}, {"state", "log"}} {
		if c := d.run(r); c != 0 {
			bad("the reader hgate %s: exit %d: %s", strings.Join(r, " "), c, strings.TrimSpace(d.ts.ReadFile("stderr")))
		}
	}
}

// checkLeftoversIn is checkLeftovers for the copy on the disk and its TMPDIR, and also
// looks for a state file's temporary file deeper in the workspace (a loop run's folder).
func (d *diskCampaign) checkLeftoversIn(what string) {
	work := d.ts.Getenv("WORK")
	d.ts.Setenv("WORK", d.proj)
	defer d.ts.Setenv("WORK", work)
	d.checkLeftovers(what)
	ws := filepath.Join(d.proj, "workspace")
	_ = filepath.WalkDir(ws, func(p string, e os.DirEntry, err error) error {
		dir := filepath.Dir(p)
		if err == nil && !e.IsDir() && dir != ws && dir != filepath.Join(ws, "receipts") && statefile.IsTemp(e.Name()) {
			d.leftovers = append(d.leftovers, what+": "+p)
		}
		return nil
	})
}
