package loop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/internal/sandbox"
)

// runFrom is a folder programs are run or read from outside the agent's sandbox, and why.
// A folder a link on PATH leads through is held: only a write set that holds it can
// change what the link runs (the folders below it cannot).
type runFrom struct {
	dir, what string
	held      bool
}

// meets reports whether the agent's folder p could change what f runs or reads.
func (f runFrom) meets(p string) bool {
	if f.held {
		return within(f.dir, p) || within(f.dir, resolved(p))
	}
	return overlap(p, f.dir)
}

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
	fix := "give the agent a folder that is none of these, or take the folder off PATH"
	check := func(field string, paths []string) error {
		for _, w := range paths {
			p, err := expandPath(w, root)
			if err != nil {
				return err
			}
			// The first folder it overlaps is named: one refusal a path.
			if i := slices.IndexFunc(from, func(f runFrom) bool { return f.meets(p) }); i >= 0 {
				errs = append(errs, &NotStarted{
					Reason: fmt.Sprintf("%s and %s, %s, overlap: the agent could leave a program there that runs outside its sandbox", w, from[i].dir, from[i].what),
					Where:  field,
					Fix:    fix,
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
	// A link on PATH that leads into the repository leads where allow may let the agent
	// write (PATH's own folders there are skipped: tasks and hgate's git never look there).
	from = slices.DeleteFunc(from, func(f runFrom) bool { return !f.held })
	fix = "point the link outside the repository, or take its folder off PATH"
	if err := check("allow", []string{root}); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// runFromFolders lists the folders plantable keeps out of the agent's write set.
func runFromFolders(root string) []runFrom {
	var out []runFrom
	for _, d := range sandbox.SystemRead() {
		out = append(out, runFrom{dir: d, what: "a system folder tasks read"})
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
		out = append(out, runFrom{dir: d, what: what})
	}
	if exe, err := os.Executable(); err == nil {
		out = append(out, runFrom{dir: filepath.Dir(exe), what: "hgate's own folder"})
		out = append(out, linkedFolders(filepath.Dir(exe), "a program in hgate's own folder")...)
	}
	seen := map[string]bool{}
	for _, d := range on {
		if !seen[d] { // PATH may name a folder twice
			seen[d] = true
			out = append(out, linkedFolders(d, "a program on PATH")...)
		}
	}
	return out
}

// linkedFolders are the folders the links in dir lead through, each named once: a
// program found there by name runs from wherever its links lead, so whoever may write
// one of those folders can change what it runs (~/bin/git, a link to ~/sdk/git).
func linkedFolders(dir, what string) []runFrom {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil // not there: nothing runs from it
	}
	var out []runFrom
	for _, name := range linkNames(real) {
		for _, f := range linkFolders(real, name) {
			if !slices.ContainsFunc(out, func(r runFrom) bool { return r.dir == f }) {
				out = append(out, runFrom{dir: f, what: fmt.Sprintf("where %s, %s, leads through its links", filepath.Join(dir, name), what), held: true})
			}
		}
	}
	return out
}

// linkNames are the names of the links in the folder dir (links resolved).
func linkNames(dir string) []string {
	d, err := fsafe.OpenRoot(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	ents, _ := d.ReadDir(".")
	var out []string
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink != 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// maxHops is how many links the kernel follows on one path before ELOOP.
const maxHops = 40

// linkFolders are the folders on the way from the link name in dir (a folder without
// links in its path) to what it leads to: the folder of every link met after the first,
// and the folder that holds, or would hold, the end. A part that is missing ends the walk:
// whoever may write above it can create it.
func linkFolders(dir, name string) []string {
	var out []string
	add := func(d string) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	done, rest := dir, []string{name}
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		next := filepath.Join(done, c)
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			add(filepath.Dir(filepath.Join(append([]string{next}, rest...)...)))
			return out
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(rest) == 0 {
				add(done)
			}
			done = next
			continue
		}
		if hops++; hops > maxHops {
			return out // ELOOP: it runs nothing
		}
		t, err := os.Readlink(next)
		if err != nil {
			return out
		}
		if hops > 1 {
			add(done) // the link's own folder: the first is dir, a folder on PATH
		}
		if filepath.IsAbs(t) {
			done = "/"
		}
		rest = append(strings.Split(t, "/"), rest...)
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
