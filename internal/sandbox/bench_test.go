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
// allowlist, Isolate: PID, IPC and mount namespaces; -net adds a network namespace), with
// hgate-sandbox built beside, against the same task run bare: counted system-wide from
// /proc/stat, so that the kernel's work on namespaces (their clean-up runs in kernel
// threads, after the task) is in, and from this process's children's rusage. The machine
// must be otherwise idle for the system-wide figure to mean anything.
func BenchmarkTaskCPU(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
	// HGATE_SANDBOX_SHIM names a built hgate-sandbox (to run this as another user, who
	// cannot build in the module's folder).
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
	defer func() { shimCached = saved }()
	w := b.TempDir()
	var bare float64 // children CPU per bare task, for the ratio
	for _, c := range []struct {
		name string
		p    *Policy
	}{
		{"bare", nil},
		{"isolated", &Policy{Write: []string{w}, Read: SystemRead(), Isolate: true}},
		{"isolated-net", &Policy{Write: []string{w}, Read: SystemRead(), Isolate: true, NoNetwork: true}},
		// A test-split task with one cache: its overlay, and the layer folder made and removed.
		{"isolated-layered", &Policy{Write: []string{w}, Read: SystemRead(), Isolate: true, Layered: []string{w}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			sys0, kids0 := systemCPU(b), childrenCPU()
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				var layers string
				if c.p != nil {
					p := *c.p
					if len(p.Layered) > 0 {
						layers, _ = os.MkdirTemp("", "layers-")
						p.LayerDir = layers
					}
					if err := Wrap(cmd, p); err != nil {
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
			n := float64(b.N) * float64(time.Millisecond)
			b.ReportMetric(float64(systemCPU(b)-sys0)/n, "ms-cpu-system/task")
			kids := float64(childrenCPU()-kids0) / n
			b.ReportMetric(kids, "ms-cpu-children/task")
			if c.p == nil {
				bare = kids
			} else if bare > 0 {
				b.ReportMetric(kids/bare, "x-bare")
			}
		})
	}
}

// systemCPU is the CPU time every CPU spent busy since boot (/proc/stat: user, nice,
// system, irq, softirq, steal), in USER_HZ ticks turned into a duration.
func systemCPU(b *testing.B) time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Skip(err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system [idle iowait] irq softirq steal
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
