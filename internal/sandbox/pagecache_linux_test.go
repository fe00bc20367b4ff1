package sandbox

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkPageCacheChannel measures the one channel from a test task to a later process
// that the sandbox concedes: the page cache. A sandboxed, isolated tree (the clean room's
// policy: read allowlist, namespaces, read-only mounts) reads one byte of each file under
// /usr/share whose bit is 1; this process, outside, asks for the same byte with
// preadv2(RWF_NOWAIT), which fails with EAGAIN when the page is not cached, without
// reading it (mincore would need write access to the file, which a non-owner lacks, but
// RWF_NOWAIT needs only read access). Each file's pages are dropped first
// (POSIX_FADV_DONTNEED, which any reader may ask for). Reported: bits per second of the
// whole round (drop, the sandboxed run, the probe) and the share of bits read wrong.
func BenchmarkPageCacheChannel(b *testing.B) {
	needSandboxB(b)
	files := pageFiles(256)
	if len(files) < 64 {
		b.Skipf("only %d large enough readable files under /usr/share", len(files))
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	p := Policy{Read: append(SystemRead(), filepath.Dir(self)), Isolate: true}
	wrong, total := 0, 0
	start := time.Now()
	for range b.N {
		bits := make([]byte, len(files))
		for i := range bits {
			bits[i] = byte('0' + rand.IntN(2))
		}
		for _, f := range files {
			drop(f)
		}
		cmd := exec.Command(self, append([]string{"pages", string(bits)}, files...)...)
		cmd.Env = append(os.Environ(), helperEnv+"=pages")
		if err := Wrap(cmd, p); err != nil {
			b.Fatal(err)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		for i, f := range files {
			if cached(f) != (bits[i] == '1') {
				wrong++
			}
			total++
		}
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "bits/s")
	b.ReportMetric(float64(wrong)/float64(total), "wrong/bit")
}

func needSandboxB(b *testing.B) {
	if err := Namespaces(); err != nil {
		b.Skip(err)
	}
}

// pageFiles lists up to n regular files under /usr/share of at least 128 KiB that anyone
// may read.
func pageFiles(n int) []string {
	var out []string
	filepath.WalkDir("/usr/share", func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(out) >= n {
			return filepath.SkipDir
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() >= 128<<10 && fi.Mode().Perm()&0o004 != 0 && !strings.Contains(p, ",") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// drop asks the kernel to drop path's clean cached pages.
func drop(path string) {
	if f, err := os.Open(path); err == nil {
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
	}
}

// cached reports whether the byte at 64 KiB of path is in the page cache, without reading
// it in.
func cached(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 1)
	_, err = unix.Preadv2(int(f.Fd()), [][]byte{buf}, 64<<10, unix.RWF_NOWAIT)
	return !errors.Is(err, unix.EAGAIN)
}
