package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hgate/hgate/internal/timescale"
)

// helper is what the test binary does when started as a sandboxed command: "net" lists the
// network interfaces and talks to itself over 127.0.0.1; "orphan DIR" starts an isolated
// tree holding DIR/lock and exits without waiting for it; "warm DIR" starts a warm shim
// and exits once it waits (warmHelper).
func helper(what string) int {
	switch what {
	case "net":
		ifs, err := net.Interfaces()
		if err != nil {
			fmt.Println(err)
			return 1
		}
		for _, i := range ifs {
			fmt.Printf("%s up=%v\n", i.Name, i.Flags&net.FlagUp != 0)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			fmt.Println(err)
			return 1
		}
		c.Close()
		fmt.Println("loopback ok")
		return 0
	case "warm":
		return warmHelper(os.Args[len(os.Args)-1])
	case "dial":
		// dial ADDR...: connect to each address and read its first line; one line an
		// address: "ADDR: LINE" or "ADDR: no (ERROR)".
		for _, addr := range os.Args[2:] {
			fmt.Printf("%s: %s\n", addr, dialLine(addr))
		}
		return 0
	case "pages":
		// pages BITS FILE...: read one byte at 64 KiB into each file whose bit is 1.
		bits := os.Args[2]
		for i, p := range os.Args[3:] {
			if bits[i] == '1' {
				if f, err := os.Open(p); err == nil {
					f.ReadAt(make([]byte, 1), 64<<10)
					f.Close()
				}
			}
		}
		return 0
	case "pty":
		return ptyHelper(os.Args[2])
	case "meta":
		// meta PATH...: read each path (a folder is listed), then try to change its
		// attributes; one line a path: "name read chmod utime chown xattr", each ok or no.
		for _, p := range os.Args[2:] {
			fmt.Println(filepath.Base(p), tryMeta(p))
		}
		return 0
	case "keyadd", "keyfind":
		// keyadd: add a key to the session, user and user-session keyrings; keyfind: say
		// which of them holds one ("found @s" ...).
		for _, r := range []struct {
			name string
			id   int
		}{{"@s", unix.KEY_SPEC_SESSION_KEYRING}, {"@u", unix.KEY_SPEC_USER_KEYRING}, {"@us", unix.KEY_SPEC_USER_SESSION_KEYRING}} {
			desc := "hgate-sandbox-test-" + strconv.Itoa(os.Getppid()) + r.name
			if what == "keyadd" {
				unix.AddKey("user", desc, []byte("1"), r.id)
			} else if _, err := unix.KeyctlSearch(r.id, "user", desc, 0); err == nil {
				fmt.Println("found", r.name)
			}
		}
		return 0
	case "orphan":
		dir := os.Args[len(os.Args)-1]
		cmd := exec.Command("flock", filepath.Join(dir, "lock"), "sh", "-c", "echo held > ready.tmp && mv ready.tmp ready && exec sleep 1000")
		cmd.Dir = dir
		if err := Wrap(cmd, Policy{Write: []string{dir}, Isolate: true}); err != nil {
			fmt.Println(err)
			return 1
		}
		if err := cmd.Start(); err != nil {
			fmt.Println(err)
			return 1
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
				return 0 // die with the tree still running: it must die too
			}
			time.Sleep(time.Millisecond)
		}
	}
	return 2
}

// countPids counts the numeric names in a listing of /proc.
func countPids(listing string) int {
	n := 0
	for _, f := range strings.Fields(listing) {
		if strings.Trim(f, "0123456789") == "" {
			n++
		}
	}
	return n
}

// lockFree reports whether nobody holds path's flock: the holder is dead.
func lockFree(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return true
}

// testIsolate: an isolated tree sees only its own processes, has its own IPC namespace,
// and nothing of it outlives its leader: a setsid daemon, a double fork and a renamed
// process holding a lock are gone when Wait returns (the lock is free), checked also
// through Namespace.
func testIsolate(t *testing.T) {
	dir := writableTemp(t)
	lock := filepath.Join(dir, "lock")
	os.WriteFile(lock, nil, 0o666)
	script := `ls /proc > procs
readlink /proc/self/ns/ipc > ipc
setsid flock lock sh -c 'echo a > a.tmp && mv a.tmp a && exec sleep 1000' </dev/null >/dev/null 2>&1 &
(sh -c 'exec -a innocent sleep 1000' & ) </dev/null >/dev/null 2>&1
while [ ! -e a ]; do :; done
exit 5`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if err := Wrap(cmd, Policy{Write: []string{dir}, Isolate: true}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ns, err := NamespaceOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("want exit 5, got %v %s", err, out.String())
	}
	if !lockFree(t, lock) {
		t.Error("a process of the tree still holds the lock after Wait")
	}
	if left := ns.Members(); len(left) != 0 {
		t.Errorf("processes %v are left in the namespace", left)
	}
	if err := ns.Empty(); err != nil {
		t.Error(err)
	}
	// init, sh and ls: the processes outside do not show.
	if b, _ := os.ReadFile(filepath.Join(dir, "procs")); countPids(string(b)) != 3 {
		t.Errorf("the tree sees these in /proc, want 3 processes:\n%s", b)
	}
	self, _ := os.Readlink("/proc/self/ns/ipc")
	if b, _ := os.ReadFile(filepath.Join(dir, "ipc")); strings.TrimSpace(string(b)) == self || len(b) == 0 {
		t.Errorf("IPC namespace %q, this process's %q: not its own", b, self)
	}
	// A leader that dies of a signal is reported as a shell would report it.
	cmd = exec.Command("sh", "-c", "kill -TERM $$")
	Wrap(cmd, Policy{Isolate: true})
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("signal death: want exit %d, got %v", 128+int(syscall.SIGTERM), err)
	}
	// WrapDeath tells the two apart: a death by SIGKILL is reported on the pipe, an exit
	// 137 is not.
	for script, want := range map[string]syscall.Signal{"kill -KILL $$": syscall.SIGKILL, "exit 137": 0, "exit 0": 0} {
		cmd = exec.Command("sh", "-c", script)
		d, err := WrapDeath(cmd, Policy{Isolate: true})
		if err != nil {
			t.Fatal(err)
		}
		err = cmd.Start()
		d.Started()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if got := d.Signal(); got != want {
			t.Errorf("%q: death by %v reported, want %v", script, got, want)
		}
	}
	// Only loopback, and it is up.
	self2, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(self2)
	cmd.Env = append(os.Environ(), helperEnv+"=net")
	Wrap(cmd, Policy{Isolate: true, NoNetwork: true})
	b, err := cmd.CombinedOutput()
	if err != nil || string(b) != "lo up=true\nloopback ok\n" {
		t.Errorf("network namespace: %v %q", err, b)
	}
	// The init is inside the policy with the tree, but not dumpable: the tree cannot read
	// its environment or memory, nor trace it.
	for _, f := range []string{"environ", "mem"} {
		if got, err := sh(t, &Policy{Isolate: true}, dir, "head -c1 /proc/1/"+f+" >/dev/null"); err == nil {
			t.Errorf("the tree read its init's %s: %q", f, got)
		}
	}
}

// testRead: with a read allowlist, the tree reads what it names and nothing else, not
// even a listing of / or of the folder next to it.
func testRead(t *testing.T) {
	in, out := writableTemp(t), writableTemp(t)
	os.WriteFile(filepath.Join(in, "ok.txt"), []byte("ok\n"), 0o644)
	os.WriteFile(filepath.Join(out, "secret.txt"), []byte("secret\n"), 0o644)
	p := &Policy{Read: append(SystemRead(), in), Isolate: true}
	if got, err := sh(t, p, in, "cat ok.txt && ls /proc/self/fd >/dev/null && head -c1 /dev/urandom >/dev/null && echo fine"); err != nil || got != "ok\nfine\n" {
		t.Errorf("allowed reads: %v %q", err, got)
	}
	for _, script := range []string{"cat " + filepath.Join(out, "secret.txt"), "ls " + out, "ls /"} {
		if got, err := sh(t, nil, in, script); err != nil {
			t.Fatalf("unwrapped %q: %v %s", script, err, got)
		}
		if got, err := sh(t, p, in, script); err == nil || !strings.Contains(got, "ermission denied") {
			t.Errorf("sandboxed %q: want permission denied, got %v %q", script, err, got)
		}
	}
}

// testParentDeath: when the process that started an isolated tree dies, the tree dies
// with it (the shim's parent-death signal, then the kernel empties its namespace).
func testParentDeath(t *testing.T) {
	dir := writableTemp(t)
	os.WriteFile(filepath.Join(dir, "lock"), nil, 0o666)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, dir)
	cmd.Env = append(os.Environ(), helperEnv+"=orphan")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v %s", err, b)
	}
	// The kill is asynchronous: wait for the lock, bounded (stretched on a loaded machine).
	for deadline := time.Now().Add(timescale.D(10 * time.Second)); !lockFree(t, filepath.Join(dir, "lock")); {
		if time.Now().After(deadline) {
			t.Fatal("the tree outlived the process that started it: its lock is still held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNamespaces: where the tests run (as root, or as nobody through TestUnprivileged),
// the probe finds the namespaces the isolate tests use.
func TestNamespaces(t *testing.T) {
	needSandbox(t)
	if err := Namespaces(); err != nil {
		t.Fatal(err)
	}
}

// testLayered: a Layered folder reads as it is, takes the tree's writes (which the tree
// then sees), and holds none of them afterwards: they went to LayerDir. One overlayfs
// cannot name (a comma in its path) is read-only to the tree instead, and so is every
// one where Layers says no overlay can be had.
func testLayered(t *testing.T) {
	noLayers := Layers()
	t.Logf("Layers: %v", noLayers)
	for _, name := range []string{"cache", "ca,che"} {
		dir := writableTemp(t)
		cache := filepath.Join(dir, name)
		layers := filepath.Join(dir, "layers")
		t.Cleanup(func() { removeLayers(layers) }) // before TempDir's: overlayfs leaves mode-0 folders
		for _, d := range []string{cache, layers} {
			if err := os.Mkdir(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(cache, "old"), []byte("old\n"), 0o666)
		p := &Policy{Write: []string{cache}, Read: append(SystemRead(), cache), Isolate: true, Layered: []string{cache}, LayerDir: layers}
		out, err := sh(t, p, cache, "cat old; echo marker > new && echo more >> old && cat new old")
		want := "old\nmarker\nold\nmore\n"
		if name != "cache" || noLayers != nil {
			want = "old\n" // read-only: the writes fail
			if err == nil {
				t.Errorf("%s: writes to a read-only layer succeeded: %q", name, out)
			}
		} else if err != nil {
			t.Errorf("%s: %v %q", name, err, out)
		}
		// A folder left read-only says so on the command's stderr first.
		if ro := strings.HasPrefix(out, shimName+": layer: "); ro != (name != "cache" || noLayers != nil) {
			t.Errorf("%s: read-only line %v: %q", name, ro, out)
		} else if ro {
			out = strings.SplitN(out, "\n", 2)[1]
		}
		if !strings.HasPrefix(out, want) {
			t.Errorf("%s: got %q, want it to start with %q", name, out, want)
		}
		if _, err := os.Stat(filepath.Join(cache, "new")); err == nil {
			t.Errorf("%s: the tree's new file is in the shared folder", name)
		}
		if b, _ := os.ReadFile(filepath.Join(cache, "old")); string(b) != "old\n" {
			t.Errorf("%s: the shared file changed: %q", name, b)
		}
		if entries, _ := os.ReadDir(filepath.Join(cache)); len(entries) != 1 {
			t.Errorf("%s: the shared folder holds %d entries, want 1", name, len(entries))
		}
	}
}

// tryMeta reads path and tries every change of its attributes Landlock does not govern.
func tryMeta(path string) string {
	yes := func(err error) string {
		if err != nil {
			return "no"
		}
		return "ok"
	}
	var read error
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		_, read = os.ReadDir(path)
	} else {
		_, read = os.ReadFile(path)
	}
	fi, _ := os.Stat(path)
	mode := os.FileMode(0o777)
	if fi != nil {
		mode = fi.Mode().Perm()
	}
	return strings.Join([]string{
		yes(read),
		yes(os.Chmod(path, mode)),
		yes(os.Chtimes(path, time.Unix(2e9, 0), time.Unix(2e9, 0))),
		yes(os.Lchown(path, os.Getuid(), os.Getgid())),
		yes(unix.Setxattr(path, "user.hgate", []byte("1"), 0)),
	}, " ")
}

// testReadOnly: in namespaces, whatever the tree may read but not write is on read-only
// mounts: reading a file or listing a folder leaves its access time as it was (one older
// than its modification time, which a read updates on an ordinary relatime mount), and
// chmod, utime, chown and setxattr fail there; they work on its Write paths, a single
// allowed file included. Without namespaces (Landlock alone) the same reads and changes
// go through: the check can fail.
func testReadOnly(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := writableTemp(t)
	out, ro, allowed := filepath.Join(dir, "out"), filepath.Join(dir, "ro.txt"), filepath.Join(dir, "allowed.txt")
	inside := filepath.Join(out, "w.txt")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	past := time.Unix(1e9, 0)
	reset := func() {
		for _, f := range []string{ro, allowed, inside} {
			os.WriteFile(f, []byte("x\n"), 0o666)
			os.Chmod(f, 0o666)
		}
		for _, f := range []string{ro, allowed, inside, dir} {
			if err := os.Chtimes(f, past, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(isolate bool) string {
		reset()
		cmd := exec.Command(self, "meta", ro, dir, allowed, inside)
		cmd.Env = append(os.Environ(), helperEnv+"=meta")
		if err := Wrap(cmd, Policy{Write: []string{out, allowed}, Reap: true, Isolate: isolate}); err != nil {
			t.Fatal(err)
		}
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("isolate=%v: %v %s", isolate, err, b)
		}
		return string(b)
	}
	atimeKept := func(p string) bool {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Atim.Sec == past.Unix()
	}
	if got := run(false); !strings.HasPrefix(got, "ro.txt ok ok ok ok") || atimeKept(ro) {
		t.Fatalf("Landlock alone: want the reads and changes to go through (the check could not fail), got %q, atime kept %v", got, atimeKept(ro))
	}
	name := filepath.Base(dir)
	want := "ro.txt ok no no no no\n" + name + " ok no no no no\nallowed.txt ok ok ok ok ok\nw.txt ok ok ok ok ok\n"
	if got := run(true); got != want {
		t.Errorf("in namespaces: got\n%swant\n%s", got, want)
	}
	for _, p := range []string{ro, dir} {
		if !atimeKept(p) {
			t.Errorf("%s: the tree's read changed its access time", p)
		}
	}
	if fi, _ := os.Stat(ro); fi.Mode().Perm() != 0o666 {
		t.Errorf("ro.txt: mode %v", fi.Mode())
	}
}

// testNoMark: state a tree could leave for a later process to find, beyond its Write
// paths (see testReadOnly for access times and attributes). Each probe marks from inside
// an isolated tree and looks from outside afterwards: keys in the session, user and
// user-session keyrings; SysV shared memory, semaphores and message queues; files in
// /tmp, /var/tmp and /dev/shm (content, and the attributes of one the user owns there);
// cgroup files. Only a mark the kernel keeps per user outside any namespace is allowed
// to remain: root's @u and @us (conceded).
func testNoMark(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := writableTemp(t)
	// Keyrings: the tree and the check below share this test's pid as the marker.
	cmd := exec.Command(self, "keyadd")
	cmd.Env = append(os.Environ(), helperEnv+"=keyadd")
	if err := Wrap(cmd, Policy{Isolate: true}); err != nil {
		t.Fatal(err)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("keyadd: %v %s", err, b)
	}
	find := exec.Command(self, "keyfind")
	find.Env = append(os.Environ(), helperEnv+"=keyfind")
	b, _ := find.CombinedOutput()
	got := string(b)
	if os.Geteuid() == 0 {
		// Root's user keyrings are one per uid, outside every namespace: conceded.
		got = strings.ReplaceAll(strings.ReplaceAll(got, "found @us\n", ""), "found @u\n", "")
	}
	if strings.Contains(got, "found @s") || got != "" {
		t.Errorf("keys the tree added are found afterwards:\n%s", b)
	}
	// Files outside the write set: content and attributes.
	mine := filepath.Join(os.TempDir(), "hgate-nomark-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(mine, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(mine)
	marks := []string{"/tmp/hgate-nomark-new", "/var/tmp/hgate-nomark-new", "/dev/shm/hgate-nomark-new"}
	script := "exec 2>/dev/null; ipcmk -M 4096 >/dev/null; ipcmk -S 1 >/dev/null 2>&1; ipcmk -Q >/dev/null 2>&1; "
	for _, m := range marks {
		script += "echo x > " + m + "; "
	}
	script += "chmod 600 " + mine + "; touch -d 2001-01-01 " + mine + "; "
	script += "for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/cgroup.subtree_control; do echo +pids > $f && echo wrote $f; done; true"
	before := ipcCount(t)
	out, err := sh(t, &Policy{Write: []string{dir}, Isolate: true}, dir, script)
	if err != nil || out != "" {
		t.Errorf("marks: %v %q", err, out)
	}
	for _, m := range marks {
		if _, err := os.Lstat(m); err == nil {
			os.Remove(m)
			t.Errorf("%s was made", m)
		}
	}
	if fi, _ := os.Stat(mine); fi.Mode().Perm() != 0o644 || fi.ModTime().Year() == 2001 {
		t.Errorf("%s: mode %v, time %v: changed by the tree", mine, fi.Mode(), fi.ModTime())
	}
	if after := ipcCount(t); after != before {
		t.Errorf("SysV IPC objects outside: %d before, %d after", before, after)
	}
}

// ipcCount is how many SysV IPC objects of any kind this IPC namespace holds.
func ipcCount(t *testing.T) int {
	n := 0
	for _, f := range []string{"/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Skipf("no %s: %v", f, err)
		}
		n += strings.Count(string(b), "\n") - 1
	}
	return n
}

// dialLine connects to addr and returns the first line it sends, or "no (why)".
func dialLine(addr string) string {
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix" // a pathname socket
	}
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		return "no (" + err.Error() + ")"
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timescale.D(5 * time.Second)))
	b := make([]byte, 64)
	n, err := c.Read(b)
	if n == 0 {
		return "no (" + fmt.Sprint(err) + ")"
	}
	return strings.TrimSpace(string(b[:n]))
}

// greeter accepts on l and says line to each connection, until l is closed.
func greeter(l net.Listener, line string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(line + "\n"))
		c.Close()
	}
}

// hostAddress is an address of this host's that is not loopback, or "".
func hostAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// testListen: with NoNetwork and Listen, the tree reaches the listener hgate serves on a
// descriptor the shim brought back from its namespace, and nothing else: not a listener
// of this host's on its own non-loopback address or on its loopback, not another host.
func testListen(t *testing.T) {
	ip := hostAddress()
	if ip == "" {
		t.Skip("this host has no non-loopback IPv4 address to try")
	}
	host, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go greeter(host, "host")
	// A server on the host's loopback that is not the gateway: the tree's 127.0.0.1 is
	// its namespace's own, where it is not.
	hostLo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLo.Close()
	go greeter(hostLo, "host loopback")
	// The gateway's stand-in: a port on the host's loopback, which the tree gets inside.
	gw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	port := gw.Addr().(*net.TCPAddr).Port
	inside := "127.0.0.1:" + strconv.Itoa(port)
	// Without the sandbox both answer: the refusals below are the namespace's.
	if got := dialLine(host.Addr().String()); got != "host" {
		t.Fatalf("unwrapped, the host listener answers %q", got)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=dial")
	cmd.Args = append(cmd.Args, "dial", inside, host.Addr().String(), "192.0.2.1:443", hostLo.Addr().String(), inside)
	d, err := WrapDeath(cmd, Policy{Isolate: true, NoNetwork: true, Listen: []int{port}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Start()
	d.Started()
	if err != nil {
		t.Fatal(err)
	}
	ls, err := d.Listeners(time.Minute)
	if err != nil || len(ls) != 1 {
		cmd.Wait()
		t.Fatalf("listeners: %v %v\n%s", ls, err, out.String())
	}
	go greeter(ls[0], "gateway")
	err = cmd.Wait()
	ls[0].Close()
	d.Signal()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err != nil || len(lines) != 5 {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for i, want := range []string{"gateway", "no (", "no (", "no (", "gateway"} {
		if _, got, _ := strings.Cut(lines[i], ": "); !strings.HasPrefix(got, want) {
			t.Errorf("inside the namespace, %s; want %q", lines[i], want)
		}
	}
}

// TestListenNeeds: Listen is refused without a network namespace or a channel, and for
// a port that is not one.
func TestListenNeeds(t *testing.T) {
	needSandbox(t)
	for _, c := range []struct {
		p     Policy
		death bool
	}{
		{Policy{Isolate: true, Listen: []int{8080}}, true},
		{Policy{Isolate: true, NoNetwork: true, Listen: []int{8080}}, false},
		{Policy{Isolate: true, NoNetwork: true, Listen: []int{0}}, true},
		{Policy{Isolate: true, NoNetwork: true, Listen: []int{80, 80}}, true},
	} {
		cmd := exec.Command("true")
		var err error
		if c.death {
			_, err = WrapDeath(cmd, c.p)
		} else {
			err = Wrap(cmd, c.p)
		}
		if err == nil {
			t.Errorf("%+v (channel %v): wrapped", c.p, c.death)
		}
	}
}

// testTerm: a SIGTERM to an isolated tree's shim reaches the command, whose trap runs;
// SIGTERMs end a tree that ignores them (the second one kills it). Each thread of the
// shim restricted itself into a Landlock domain of its own, and where signals are scoped
// (ABI 6) only the one the command was started from may signal the tree: a forward from
// another thread was refused, and the tree ran on until hgate killed it from outside.
func testTerm(t *testing.T) {
	for _, c := range []struct {
		name, trap string
		exit       int
		got        bool
		again      bool // SIGTERM again while the command runs: the second one kills the tree
	}{
		{"trapped", `trap 'echo term > got; exit 3' TERM`, 3, true, false},
		{"ignored", `trap '' TERM`, 128 + int(syscall.SIGKILL), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writableTemp(t)
			cmd := exec.Command("sh", "-c", c.trap+"; echo > ready; while :; do sleep 0.05; done")
			cmd.Dir = dir
			if err := Wrap(cmd, Policy{Write: []string{dir}, Isolate: true}); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			guard := time.After(timescale.D(20 * time.Second))
			for _, err := os.Stat(filepath.Join(dir, "ready")); err != nil; _, err = os.Stat(filepath.Join(dir, "ready")) {
				select {
				case <-guard:
					cmd.Process.Kill()
					t.Fatal("the command never started")
				case <-time.After(5 * time.Millisecond):
				}
			}
			var err error
			cmd.Process.Signal(syscall.SIGTERM)
		signal:
			for {
				select {
				case err = <-exited:
					break signal
				case <-guard:
					cmd.Process.Kill()
					<-exited
					t.Fatal("SIGTERMs to the shim never ended the command: they did not reach it")
				case <-time.After(50 * time.Millisecond):
					if c.again {
						cmd.Process.Signal(syscall.SIGTERM)
					}
				}
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.exit {
				t.Errorf("exit %v, want %d", err, c.exit)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "got"))
			if got := strings.TrimSpace(string(b)) == "term"; got != c.got {
				t.Errorf("the trap wrote %q to got: ran %v, want %v", b, got, c.got)
			}
		})
	}
}
