package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// maxKnownABI is the newest ABI go-landlock v0.11 knows the rights of.
const maxKnownABI = 11

// Available reports the Landlock ABI the kernel offers, or an error saying why the sandbox cannot be had
// ("landlock is not enabled in this kernel", "not supported on darwin").
func Available() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v <= 0 {
		return 0, errors.New("landlock is not enabled in this kernel")
	}
	if v >= 6 {
		// As go-landlock does: without the fix of the signal-scoping erratum the kernel
		// counts as ABI 5, so the library and we agree on what is enforced.
		if errata, err := ll.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	if v < MinABI {
		return v, fmt.Errorf("landlock ABI %d is too old (need %d, Linux 6.2, which restricts truncate)", v, MinABI)
	}
	return v, nil
}

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

// restrict applies p to the calling process (all threads) and to everything it execs.
func restrict(p Policy) error {
	abi, err := Available()
	if err != nil {
		return err
	}
	handled := handledFS(abi)
	cfg := landlock.Config{HandledAccessFS: handled}
	if abi >= 6 {
		cfg.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	hidden := existing(p.Hidden)
	var rules []landlock.Rule
	add := func(paths []string, dirRights, fileR landlock.AccessFSSet) error {
		for _, path := range split(paths, hidden) {
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
			if r &= handled; r != 0 {
				rules = append(rules, landlock.PathAccess(r, path).IgnoreIfMissing())
			}
		}
		return nil
	}
	if len(p.Read) == 0 {
		// Listing folders is granted everywhere, hidden ones included: taking it away from a
		// hidden path's ancestors would take it from "/" and the temporary folder, which tools
		// list. A hidden path's names can be seen; its contents cannot be read or run.
		rules = append(rules, landlock.PathAccess(ll.AccessFSReadDir&handled, "/"))
		if err := add([]string{"/"}, readRights&^ll.AccessFSReadDir, readRights&fileRights); err != nil {
			return fmt.Errorf("read rule: %w", err)
		}
	} else {
		// An allowlist: nothing else can be read, run or listed. The namespace's own
		// /proc shows only the tree's processes.
		read := slices.Clone(p.Read)
		if p.Isolate {
			read = append(read, "/proc")
		}
		if err := add(read, readRights, readRights&fileRights); err != nil {
			return fmt.Errorf("read rule: %w", err)
		}
		if err := add(alwaysReadable, 0, ll.AccessFSReadFile); err != nil {
			return fmt.Errorf("device: %w", err)
		}
	}
	for _, w := range p.Write {
		if _, err := os.Stat(w); err != nil {
			return fmt.Errorf("writable path: %w", err)
		}
	}
	if err := add(p.Write, handled, fileRights); err != nil {
		return fmt.Errorf("writable path: %w", err)
	}
	var devs []string
	for _, d := range alwaysWritable {
		if _, err := os.Stat(d); err == nil {
			devs = append(devs, d)
		}
	}
	if err := add(devs, deviceRights, deviceRights&fileRights); err != nil {
		return fmt.Errorf("device: %w", err)
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// keptCapabilities are root's file-permission capabilities. Landlock checks its rules on
// top of them, so they reach nothing it denies, and they let a root agent edit an allowed
// file another user owns (a checkout mounted into a container).
const keptCapabilities = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_FOWNER | 1<<unix.CAP_FSETID

// dropCapabilities leaves the calling thread no capability but keptCapabilities. A command
// run as root keeps uid 0, but what root may do past file permissions (load kernel code or
// BPF, make a device node and open the disk through it, raw I/O, open_by_handle_at, set
// the clock, reboot) would reach around Landlock, which governs paths. The bounding set is
// cut too where the thread may (CAP_SETPCAP, which root has), and the no_new_privs that
// Landlock set keeps the exec from granting any back.
func dropCapabilities() error {
	// One call a capability where the drop is allowed (root, every task): the drop itself
	// answers EINVAL past the last capability this kernel knows, where a read first
	// doubled the calls. Without CAP_SETPCAP the kernel refuses the drop (EPERM) before it
	// looks at the capability, so there a read still finds the end. The kept ones are
	// among the first, below any kernel's last.
	for c := 0; ; c++ {
		if keptCapabilities&(1<<c) != 0 {
			continue
		}
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EPERM) {
			if unix.Prctl(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0) != nil {
				break // past the last capability this kernel knows
			}
			continue
		}
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	caps[0].Effective &= keptCapabilities
	caps[0].Permitted &= keptCapabilities
	caps[0].Inheritable = 0
	caps[1] = unix.CapUserData{} // capabilities 32 and up: none is kept
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
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

// applyAndExec restricts this process to p and execs path with argv and env.
func applyAndExec(p Policy, env []string, path string, argv []string) int {
	// Capabilities belong to a thread: the one that drops them must be the one that execs.
	runtime.LockOSThread()
	if err := restrict(p); err != nil {
		return fail(err.Error())
	}
	if err := dropCapabilities(); err != nil {
		return fail(err.Error())
	}
	if !strings.Contains(path, "/") {
		// exec.Command found nothing on PATH and left the name: fail as a shell would.
		fmt.Fprintf(os.Stderr, "%s: %s: command not found\n", shimName, path)
		return exitNotFound
	}
	err := syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "%s: exec %s: %v\n", shimName, path, err)
	if errors.Is(err, syscall.ENOENT) {
		return exitNotFound
	}
	return exitNoExec
}

// SystemRead is what every program needs to read: the system's read-only folders, and
// the files name resolution reads that /etc links to under /run (a systemd-resolved
// stub, for one). Nothing else of /run: its sockets lead to the system's services.
func SystemRead() []string {
	out := []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}
	for _, f := range []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/localtime"} {
		if r, err := filepath.EvalSymlinks(f); err == nil && r != f && !strings.HasPrefix(r, "/etc/") && !strings.HasPrefix(r, "/usr/") {
			out = append(out, r)
		}
	}
	return out
}
