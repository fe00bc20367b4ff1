package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkReadOnlyMounts is the CPU readOnly adds to a task's start, apart from the rest
// of the shim: each round makes a new mount namespace on a locked thread (as the shim's
// clone does) and, in the measured half, makes it read-only but four write paths (a task's
// HOME, TMPDIR, {trace_dir} and a writable folder). Thread CPU time (user + system) per
// round, for the namespace alone and as readOnly's extra. Root only (the unprivileged
// shim does the same inside its user namespace).
func BenchmarkReadOnlyMounts(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root to make mount namespaces here")
	}
	base := b.TempDir()
	var write []string
	for _, d := range []string{"home", "tmp", "trace", "out"} {
		p := filepath.Join(base, d)
		if err := os.Mkdir(p, 0o700); err != nil {
			b.Fatal(err)
		}
		write = append(write, p)
	}
	round := func(ro bool) time.Duration {
		done := make(chan time.Duration)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread, in its own namespace, ends with the goroutine
			orig, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Error(err)
				done <- 0
				return
			}
			defer unix.Close(orig)
			// setns into a mount namespace needs a thread whose fs it does not share.
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				b.Error(err)
				done <- 0
				return
			}
			start := threadCPU()
			for range b.N {
				// From the original namespace each time: the rounds' mounts do not pile up.
				if err := unix.Setns(orig, unix.CLONE_NEWNS); err != nil {
					b.Error(err)
					break
				}
				if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
					b.Error(err)
					break
				}
				if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
					b.Error(err)
					break
				}
				if ro {
					if err := readOnly(write, nil); err != nil {
						b.Error(err)
						break
					}
				}
			}
			done <- threadCPU() - start
		}()
		return <-done
	}
	bare := round(false)
	ro := round(true)
	n := float64(b.N) * float64(time.Microsecond)
	b.ReportMetric(float64(bare)/n, "µs-ns/op")
	b.ReportMetric(float64(ro-bare)/n, "µs-readonly/op")
}

// threadCPU is the calling thread's user and system CPU time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
