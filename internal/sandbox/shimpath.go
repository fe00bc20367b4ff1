package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// self is the fallback shim: this binary, re-run.
const self = "/proc/self/exe"

// shimOnce caches shimPath's answer: the lookup and the probe happen once per process.
var (
	shimOnce   sync.Once
	shimCached string
	// warnOut receives the one warning about an unusable sibling; executable finds this
	// process's binary (tests replace both).
	warnOut    io.Writer = os.Stderr
	executable           = os.Executable
)

// shimPath is the binary Wrap starts as the shim: hgate-sandbox from the folder of this
// process's executable when it is there and answers the probe with this build's Protocol,
// else /proc/self/exe. hgate-sandbox exists so that each wrapped command starts a small
// binary instead of paying all of hgate's package initialisation twice (README, Install).
func shimPath() string {
	shimOnce.Do(func() {
		exe, err := executable()
		if err == nil {
			shimCached = chooseShim(exe, warnOut)
		} else {
			shimCached = self
		}
	})
	return shimCached
}

// chooseShim looks for hgate-sandbox next to exe (symlinks resolved) and nowhere else: never
// on PATH, where anyone who can write a PATH directory could plant one. A sibling that is
// there but does not answer the probe as this build does is skipped with one warning on w.
func chooseShim(exe string, w io.Writer) string {
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if filepath.Base(exe) == shimName {
		return self // the shim itself wrapping again: it is already the small binary
	}
	sib := filepath.Join(filepath.Dir(exe), shimName)
	fi, err := os.Stat(sib)
	if errors.Is(err, fs.ErrNotExist) {
		return self // not installed: hgate is its own shim, as before hgate-sandbox existed
	}
	if err == nil && (!fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0) {
		err = errors.New("it is not an executable file")
	}
	if err == nil {
		err = probe(sib)
	}
	if err != nil {
		fmt.Fprintf(w, "hgate: warning: not using %s: %v; hgate runs its sandbox itself, more slowly (reinstall both with go install ./cmd/...)\n", sib, err)
		return self
	}
	return sib
}

// probe runs path as the shim with probeArg and checks that it speaks this build's Protocol.
func probe(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, probeArg)
	cmd.Args[0] = shimName
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("its protocol probe failed (%v): it is from another build", err)
	}
	if got := out.String(); got != probeAnswer() {
		return fmt.Errorf("it answers %q to the protocol probe, this hgate expects %q: it is from another build", bytes.TrimSpace(out.Bytes()), bytes.TrimSpace([]byte(probeAnswer())))
	}
	return nil
}
