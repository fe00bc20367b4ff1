//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWrap measures a wrapped `true` against a bare one, with and without Reap.
func BenchmarkWrap(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
	w := b.TempDir()
	var bare, plain, reap time.Duration
	for b.Loop() {
		start := time.Now()
		exec.Command("true").Run()
		bare += time.Since(start)
		for _, r := range []bool{false, true} {
			cmd := exec.Command("true")
			Wrap(cmd, Policy{Write: []string{w}, Reap: r})
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			if r {
				reap += time.Since(start)
			} else {
				plain += time.Since(start)
			}
		}
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(bare)/n, "ms/bare")
	b.ReportMetric(float64(plain)/n, "ms/wrapped")
	b.ReportMetric(float64(reap)/n, "ms/wrapped-reap")
}

// BenchmarkTaskCPU is the CPU a task costs in the sandbox as benchmark tasks run (a read
// allowlist; Isolate: PID, IPC and mount namespaces; -net adds a network namespace), with
// hgate-sandbox built beside, against the same task run bare in the same run: b.N bare
// tasks, then b.N sandboxed ones. Two counts, each per task, for both and as the sandbox's
// extra (difference) and ratio: the process tree's CPU (this process's children's rusage:
// the shims and the task), and the whole system's (/proc/stat: user, nice, system, irq and
// softirq of every CPU), which includes what the kernel does for the namespaces outside the
// tree, such as their clean-up in kernel threads after the task. The system-wide figure means
// something only on an otherwise idle machine.
func BenchmarkTaskCPU(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
	useShim(b)
	for _, c := range taskPolicies(b.TempDir()) {
		b.Run(c.name, func(b *testing.B) {
			bare := taskCPU(b, nil)
			wrapped := taskCPU(b, &c.p)
			n := float64(b.N) * float64(time.Millisecond)
			for _, m := range []struct {
				unit        string
				bare, total time.Duration
			}{
				{"tree", bare.tree, wrapped.tree},
				{"sys", bare.sys, wrapped.sys},
			} {
				b.ReportMetric(float64(m.total)/n, "ms-"+m.unit+"/task")
				b.ReportMetric(float64(m.bare)/n, "ms-"+m.unit+"-bare/task")
				b.ReportMetric(float64(m.total-m.bare)/n, "ms-"+m.unit+"-extra/task")
				if m.bare > 0 {
					b.ReportMetric(float64(m.total)/float64(m.bare), "x-"+m.unit+"-bare")
				}
			}
		})
	}
}

// useShim makes Wrap start a hgate-sandbox built for the benchmark, as installed, until
// the benchmark ends. HGATE_SANDBOX_SHIM names a built one instead (to run this as
// another user, who cannot build in the module's folder).
func useShim(b *testing.B) {
	shim := os.Getenv("HGATE_SANDBOX_SHIM")
	if shim == "" {
		bin := b.TempDir()
		build := exec.Command("go", "build", "-o", bin, "github.com/hgate/hgate/cmd/hgate-sandbox")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			b.Skipf("go build hgate-sandbox: %v %s", err, out)
		}
		shim = filepath.Join(bin, shimName)
	}
	shimOnce.Do(func() {})
	saved := shimCached
	shimCached = shim
	b.Cleanup(func() { shimCached = saved })
}

// taskPolicies are the policies benchmark tasks run under, writing w.
func taskPolicies(w string) []struct {
	name string
	p    Policy
} {
	return []struct {
		name string
		p    Policy
	}{
		{"landlock", Policy{Write: []string{w}, Read: SystemRead()}},
		{"isolated", Policy{Write: []string{w}, Read: SystemRead(), Isolate: true}},
		{"isolated-net", Policy{Write: []string{w}, Read: SystemRead(), Isolate: true, NoNetwork: true}},
		// A test-split task with one cache: its overlay, and the layer folder made and removed.
		{"isolated-layered", Policy{Write: []string{w}, Read: SystemRead(), Isolate: true, Layered: []string{w}}},
	}
}

// BenchmarkTaskWall is the wall time of a task (/bin/true) in the sandbox as benchmark
// tasks run, with hgate-sandbox built beside, against the same task run bare, alternately
// (the machine's load hits both alike): what each task start costs a benchmark run.
func BenchmarkTaskWall(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
	useShim(b)
	for _, c := range taskPolicies(b.TempDir()) {
		b.Run(c.name, func(b *testing.B) {
			var bare, wrapped time.Duration
			for b.Loop() {
				bare += taskWall(b, nil)
				wrapped += taskWall(b, &c.p)
			}
			n := float64(b.N) * float64(time.Millisecond)
			b.ReportMetric(float64(bare)/n, "ms-bare/task")
			b.ReportMetric(float64(wrapped)/n, "ms/task")
			b.ReportMetric(float64(wrapped-bare)/n, "ms-extra/task")
		})
	}
}

// taskWall runs one task, under p when it is not nil, and returns its wall time (the
// layer folder's making and removal included: a task pays them).
func taskWall(b *testing.B, p *Policy) time.Duration {
	start := time.Now()
	cmd := exec.Command("/bin/true")
	var layers string
	if p != nil {
		q := *p
		if len(q.Layered) > 0 {
			layers, _ = os.MkdirTemp("", "layers-")
			q.LayerDir = layers
		}
		if err := Wrap(cmd, q); err != nil {
			b.Fatal(err)
		}
	}
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	if layers != "" {
		removeLayers(layers)
	}
	return time.Since(start)
}

// cpu is what b.N tasks cost: their process trees' CPU and the system's.
type cpu struct{ tree, sys time.Duration }

// taskCPU runs b.N tasks (/bin/true), under p when it is not nil, and returns their CPU.
func taskCPU(b *testing.B, p *Policy) cpu {
	sys0, kids0 := systemCPU(b), childrenCPU()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command("/bin/true")
		var layers string
		if p != nil {
			q := *p
			if len(q.Layered) > 0 {
				layers, _ = os.MkdirTemp("", "layers-")
				q.LayerDir = layers
			}
			if err := Wrap(cmd, q); err != nil {
				b.Fatal(err)
			}
		}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		if layers != "" {
			removeLayers(layers)
		}
	}
	return cpu{tree: childrenCPU() - kids0, sys: systemCPU(b) - sys0}
}

// systemCPU is the CPU time every CPU spent busy since boot (/proc/stat: user, nice,
// system, irq, softirq; not steal, the hypervisor's), in USER_HZ ticks turned into a duration.
func systemCPU(b *testing.B) time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Skip(err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system [idle iowait] irq softirq
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

func childrenCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLayeredRead: a task reading a warm cache (200 files of 256 KiB) through its
// private overlay, against the same task reading the folder itself, both isolated and
// interleaved (the machine's load hits both alike): the test split keeps the cache's speed.
func BenchmarkLayeredRead(b *testing.B) {
	if err := Layers(); err != nil {
		b.Skip(err)
	}
	cache := b.TempDir()
	data := bytes.Repeat([]byte("x"), 256<<10)
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(cache, strconv.Itoa(i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var direct, layered time.Duration
	for b.Loop() {
		for _, layer := range []bool{false, true} {
			cmd := exec.Command("sh", "-c", "cat ./* > /dev/null")
			cmd.Dir = cache
			p := Policy{Write: []string{cache}, Read: SystemRead(), Isolate: true}
			if layer {
				p.Layered = []string{cache}
				p.LayerDir, _ = os.MkdirTemp("", "layers-")
			}
			if err := Wrap(cmd, p); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
			if layer {
				layered += time.Since(start)
				removeLayers(p.LayerDir)
			} else {
				direct += time.Since(start)
			}
		}
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(direct)/n, "ms/direct")
	b.ReportMetric(float64(layered)/n, "ms/layered")
	b.ReportMetric(float64(layered)/float64(direct), "x-direct")
}

// BenchmarkListen: what Listen adds to an isolated command's start and end (the agent's
// phase under loop.sandbox.network: model), against the same command with a network
// namespace and no listener.
func BenchmarkListen(b *testing.B) {
	if err := Namespaces(); err != nil {
		b.Skip(err)
	}
	var none, listen time.Duration
	for b.Loop() {
		for _, ports := range [][]int{nil, {40123}} {
			cmd := exec.Command("true")
			start := time.Now()
			d, err := WrapDeath(cmd, Policy{Isolate: true, NoNetwork: true, Listen: ports})
			if err != nil {
				b.Fatal(err)
			}
			err = cmd.Start()
			d.Started()
			if err != nil {
				b.Fatal(err)
			}
			ls, err := d.Listeners(time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			cmd.Wait()
			for _, l := range ls {
				l.Close()
			}
			d.Signal()
			if ports == nil {
				none += time.Since(start)
			} else {
				listen += time.Since(start)
			}
		}
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(none)/n, "ms/netns")
	b.ReportMetric(float64(listen)/n, "ms/listen")
}

// BenchmarkIsolateSockets: what covering the user's sockets costs a task's start. An
// isolated `true` while this process listens on 300 more pathname sockets (a desktop's
// services, its tmux and ssh-agent), each covered in the task's mount namespace, against
// the same with none first, in one run: the ratio is the cover's share.
func BenchmarkIsolateSockets(b *testing.B) {
	if err := Namespaces(); err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	run := func() time.Duration {
		cmd := exec.Command("true")
		if err := Wrap(cmd, Policy{Isolate: true}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var none, many time.Duration
	for b.Loop() {
		none += run()
	}
	var fds []int
	for i := range 300 {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			err = syscall.Bind(fd, &syscall.SockaddrUnix{Name: filepath.Join(dir, strconv.Itoa(i))})
		}
		if err != nil {
			b.Fatal(err)
		}
		fds = append(fds, fd)
	}
	for range b.N {
		many += run()
	}
	for _, fd := range fds {
		syscall.Close(fd)
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(none)/n, "ms/start")
	b.ReportMetric(float64(many)/n, "ms/start-300-sockets")
	b.ReportMetric(float64(many)/float64(none), "x-300-sockets")
}
