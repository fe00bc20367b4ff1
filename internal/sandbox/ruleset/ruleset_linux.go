package ruleset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hgate/hgate/internal/sandbox"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// maxKnownABI is the newest ABI go-landlock v0.11 knows the rights of.
const maxKnownABI = 11

// handledFS is every filesystem right ABI abi knows; all are handled, so whatever is not
// granted by a rule is denied.
func handledFS(abi int) landlock.AccessFSSet {
	bits := map[int]uint{1: 13, 2: 14, 3: 15, 4: 15, 5: 16, 6: 16, 7: 16, 8: 16}[min(abi, maxKnownABI)]
	if abi >= 9 {
		bits = 17
	}
	return landlock.AccessFSSet(1<<bits - 1)
}

const (
	readRights = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir |
		// Connecting to a pathname socket is like using the network, which stays
		// unhandled: agents talk to their model and resolvers.
		ll.AccessFSResolveUnix
	fileRights   = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	deviceRights = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev | ll.AccessFSReadDir
)

// alwaysReadable are the devices a read allowlist always grants reading.
var alwaysReadable = []string{"/dev/urandom", "/dev/random"}

// alwaysWritable are the devices every tool expects to write (terminals included).
var alwaysWritable = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// Restrict applies p to the calling process (all threads) and to everything it execs.
func Restrict(p sandbox.Policy) error {
	abi, err := sandbox.Available()
	if err != nil {
		return err
	}
	b := builder{handled: handledFS(abi), hidden: existing(p.Hidden)}
	cfg := landlock.Config{HandledAccessFS: b.handled}
	if abi >= 6 {
		cfg.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	if err := b.read(p); err != nil {
		return err
	}
	if err := b.write(p); err != nil {
		return err
	}
	if err := cfg.Restrict(b.rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// builder collects a policy's rules: every right it grants is one handled, and no rule
// covers a hidden path.
type builder struct {
	handled landlock.AccessFSSet
	hidden  []string
	rules   []landlock.Rule
}

// add grants dirRights beneath each of paths that is a folder, fileR on each that is a
// file; a path holding a hidden one is split into the siblings along the way to it.
func (b *builder) add(paths []string, dirRights, fileR landlock.AccessFSSet) error {
	for _, path := range split(paths, b.hidden) {
		// Siblings come and go (think of /tmp): one that is gone gets no rule,
		// which only ever grants less. Write paths were checked to exist.
		// A read root the user cannot reach (another's home on PATH) gets none.
		fi, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			continue // nothing to grant: what cannot be reached cannot be read either
		}
		if err != nil {
			return err
		}
		r := fileR
		if fi.IsDir() {
			r = dirRights
		}
		if r &= b.handled; r != 0 {
			b.rules = append(b.rules, landlock.PathAccess(r, path).IgnoreIfMissing())
		}
	}
	return nil
}

// read adds what the tree may read: everything but the hidden paths, or the allowlist.
func (b *builder) read(p sandbox.Policy) error {
	if len(p.Read) == 0 {
		// Listing folders is granted everywhere, hidden ones included: taking it away from a
		// hidden path's ancestors would take it from "/" and the temporary folder, which tools
		// list. A hidden path's names can be seen; its contents cannot be read or run.
		b.rules = append(b.rules, landlock.PathAccess(ll.AccessFSReadDir&b.handled, "/"))
		if err := b.add([]string{"/"}, readRights&^ll.AccessFSReadDir, readRights&fileRights); err != nil {
			return fmt.Errorf("read rule: %w", err)
		}
		return nil
	}
	// An allowlist: nothing else can be read, run or listed. The namespace's own
	// /proc shows only the tree's processes.
	read := slices.Clone(p.Read)
	if p.Isolate {
		read = append(read, "/proc")
	}
	if err := b.add(read, readRights, readRights&fileRights); err != nil {
		return fmt.Errorf("read rule: %w", err)
	}
	if err := b.add(alwaysReadable, 0, ll.AccessFSReadFile); err != nil {
		return fmt.Errorf("device: %w", err)
	}
	return nil
}

// write adds what the tree may write: the policy's Write paths, which must exist, and
// the devices every tool writes.
func (b *builder) write(p sandbox.Policy) error {
	for _, w := range p.Write {
		if _, err := os.Stat(w); err != nil {
			return fmt.Errorf("writable path: %w", err)
		}
	}
	if err := b.add(p.Write, b.handled, fileRights); err != nil {
		return fmt.Errorf("writable path: %w", err)
	}
	var devs []string
	for _, d := range alwaysWritable {
		if _, err := os.Stat(d); err == nil {
			devs = append(devs, d)
		}
	}
	if err := b.add(devs, deviceRights, deviceRights&fileRights); err != nil {
		return fmt.Errorf("device: %w", err)
	}
	return nil
}

// existing resolves the hidden paths that exist to their real location; rules follow
// symlinks, so the real path is what must not be granted.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// split replaces every root that contains a hidden path by the siblings along the way down
// to it: a Landlock rule grants a whole hierarchy, so the ancestors of a hidden path get no
// rule and each entry next to the path gets one instead. Symlinks among the siblings are
// left out: access through them is checked at their target, which has its own rule.
func split(roots, hidden []string) []string {
	set := map[string]bool{}
	for _, r := range roots {
		set[filepath.Clean(r)] = true
	}
	for _, h := range hidden {
		for r := range set {
			if within(r, h) {
				delete(set, r)
			}
		}
		for r := range set {
			if r != h && !within(h, r) {
				continue
			}
			delete(set, r)
			// Walk from r down to h, granting every entry off the path.
			dir := r
			for dir != h {
				next := filepath.Join(dir, strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(h, dir), "/"), "/", 2)[0])
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					p := filepath.Join(dir, e.Name())
					if p != next && e.Type()&os.ModeSymlink == 0 {
						set[p] = true
					}
				}
				dir = next
			}
			break
		}
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// within reports whether path is strictly below dir.
func within(path, dir string) bool {
	if dir == "/" {
		return path != "/"
	}
	return strings.HasPrefix(path, dir+"/")
}
