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
	"sync/atomic"
	"time"

	"github.com/hgate/hgate/internal/proc"
)

// self is the fallback shim: this binary, re-run.
const self = "/proc/self/exe"

// shimOnce caches shimPath's answer: the lookup and the probe happen once per process.
var (
	shimOnce   sync.Once
	shimCached string
	shimChosen atomic.Bool // shimOnce has run: shimCached is the answer
	// warnOut receives the one warning about an unusable sibling; executable finds this
	// process's binary (tests replace both).
	warnOut    io.Writer = os.Stderr
	executable           = os.Executable
)

// shimPath is the binary Wrap starts as the shim: hgate-sandbox from the folder of this
// process's executable when it is there and answers the probe with this build's Protocol,
// else /proc/self/exe when this binary can be its own shim (see fallback), else "".
// hgate-sandbox exists so that each wrapped command starts a small
// binary instead of paying all of hgate's package initialisation twice (README, Install).
func shimPath() string {
	shimOnce.Do(func() {
		exe, err := executable()
		if err == nil {
			shimCached = chooseShim(exe, warnOut)
		} else {
			shimCached = fallback()
		}
		shimChosen.Store(true)
	})
	return shimCached
}

// chooseShim looks for hgate-sandbox next to exe (symlinks resolved) and nowhere else: never
// on PATH, where anyone who can write a PATH directory could plant one. A sibling that is
// there but does not answer the probe as this build does is skipped with one warning on w.
func chooseShim(exe string, w io.Writer) string {
	sib, err := sibling(exe)
	if sib == "" {
		return fallback()
	}
	if err == nil {
		err = probe(sib)
	}
	if err == nil {
		return sib
	}
	if fallback() == "" {
		fmt.Fprintf(w, "hgate: warning: not using %s: %v (reinstall it with go install ./cmd/...)\n", sib, err)
		return ""
	}
	fmt.Fprintf(w, "hgate: warning: not using %s: %v; hgate runs its sandbox itself, more slowly (reinstall both with go install ./cmd/...)\n", sib, err)
	return self
}

// pins are the shims started so far, each pinned at its first start (proc.Pin): the
// shim runs as the user, outside the sandbox it sets up, so one changed since, through
// another name of its file a sandboxed process may write, is never started.
var pins sync.Map // path → proc.Pin

// startableShim is bin, the shim chosen, when one was and it is still the file it was at
// its first start.
func startableShim(bin string) (string, error) {
	if bin == "" {
		return "", errors.New("sandbox: no hgate-sandbox of this build beside this executable, and it cannot be its own shim (install both: CGO_ENABLED=0 go install ./cmd/...)")
	}
	if err := checkPinned(bin); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return bin, nil
}

// checkPinned pins bin at its first start and checks it at every later one. This binary
// itself (self) needs none: a running executable cannot be written.
func checkPinned(bin string) error {
	if bin == self {
		return nil
	}
	if p, ok := pins.Load(bin); ok {
		return p.(proc.Pin).Check()
	}
	p, err := proc.PinProgram(bin)
	if err != nil {
		return err
	}
	pins.LoadOrStore(bin, p)
	return nil
}

// fallback is the shim when no usable hgate-sandbox is beside this executable: this
// binary again when it can be one (Main was given a ruleset), else none (""): a test
// binary that never called Main would run its tests again instead of the command.
func fallback() string {
	if restrictWith == nil {
		return ""
	}
	return self
}

// sibling is the hgate-sandbox next to exe (symlinks resolved) that chooseShim would
// probe, with what is wrong with it already (not an executable file); "" when there is
// none to consider: not installed, or exe is the shim itself wrapping again (it is
// already the small binary).
func sibling(exe string) (string, error) {
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if filepath.Base(exe) == shimName {
		return "", nil
	}
	sib := filepath.Join(filepath.Dir(exe), shimName)
	fi, err := os.Stat(sib)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // not installed: hgate is its own shim, as before hgate-sandbox existed
	}
	if err == nil && (!fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0) {
		err = errors.New("it is not an executable file")
	}
	return sib, err
}

// untried is the installed hgate-sandbox next to this executable while shimPath has
// not chosen yet and nothing is known to be wrong with it: what Namespaces can try as
// the shim and as its leader at once, learning both answers from one start. "" otherwise.
func untried() string {
	if shimChosen.Load() {
		return ""
	}
	exe, err := executable()
	if err != nil {
		return ""
	}
	if sib, err := sibling(exe); err == nil {
		return sib
	}
	return ""
}

// adopt makes sib the shim, as shimPath would after its probe: Namespaces saw sib
// answer its probe from inside the sandbox with this build's protocol. A choice made
// already (by a concurrent shimPath) stands.
func adopt(sib string) {
	shimOnce.Do(func() {
		shimCached = sib
		shimChosen.Store(true)
	})
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
