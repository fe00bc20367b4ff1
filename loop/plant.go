package loop

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/internal/sandbox"
)

// runFrom is a folder programs are run or read from outside the agent's sandbox, and why.
type runFrom struct{ dir, what string }

// plantable refuses a sandboxed run whose agent could write where programs are found by
// name or read outside its sandbox: a folder on PATH (hgate looks git up there when a
// run starts, and tasks every command they run), the folder above one named bin or
// shims and the system's folders (which tasks read without being told) and hgate's own
// folder. A program the agent left there would run as the user, unsandboxed (hgate's
// git), or stand in for what a test task runs (a `cmp` that always matches).
// clean_room.read is left to the user, who names it: a folder of the agent's there is
// read by tasks as it asks (loop_sandbox_outlive.txtar's lock).
func (r *runner) plantable() error {
	if !r.cfg.Sandbox.Enabled {
		return nil // the agent runs as the user: it can write them all anyway
	}
	root := r.repo.Root()
	from := runFromFolders(root)
	var errs []error
	check := func(field string, paths []string) error {
		for _, w := range paths {
			p, err := expandPath(w, root)
			if err != nil {
				return err
			}
			// The first folder it overlaps is named: one refusal a path.
			if i := slices.IndexFunc(from, func(f runFrom) bool { return overlap(p, f.dir) }); i >= 0 {
				errs = append(errs, &NotStarted{
					Reason: fmt.Sprintf("%s and %s, %s, overlap: the agent could leave a program there that runs outside its sandbox", w, from[i].dir, from[i].what),
					Where:  field,
					Fix:    "give the agent a folder that is none of these, or take the folder off PATH",
				})
			}
		}
		return nil
	}
	if err := check("loop.sandbox.writable", r.cfg.Sandbox.Writable); err != nil {
		return err
	}
	cli := r.cli()
	if err := check("loop.agent: the "+cli.Name()+" preset's folders", cli.Writable()); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// runFromFolders lists the folders plantable keeps out of the agent's write set.
func runFromFolders(root string) []runFrom {
	var out []runFrom
	for _, d := range sandbox.SystemRead() {
		out = append(out, runFrom{d, "a system folder tasks read"})
	}
	// Entries inside the repository are not the tasks' PATH, and hgate's git skips them.
	path := cleanroom.CleanPath(os.Getenv("PATH"), root)
	var on []string
	for _, d := range filepath.SplitList(path) {
		on = append(on, filepath.Clean(d))
	}
	for _, d := range cleanroom.PathRead(path) {
		what := "a folder on PATH"
		if !slices.Contains(on, d) {
			what = "the folder above one on PATH, which tasks read"
		}
		out = append(out, runFrom{d, what})
	}
	if exe, err := os.Executable(); err == nil {
		out = append(out, runFrom{filepath.Dir(exe), "hgate's own folder"})
	}
	return out
}

// overlap reports whether a and b are one folder or one holds the other, as written or
// with their links resolved (a PATH entry ~/bin that links to ~/.local/bin).
func overlap(a, b string) bool {
	if within(a, b) || within(b, a) {
		return true
	}
	ra, rb := resolved(a), resolved(b)
	return within(ra, rb) || within(rb, ra)
}

// resolved is p with the links of its longest existing part resolved.
func resolved(p string) string {
	p = filepath.Clean(p)
	for rest := ""; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		up := filepath.Dir(p)
		if up == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = up
	}
}
