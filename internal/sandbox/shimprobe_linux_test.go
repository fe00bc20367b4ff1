package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// resetShim forgets which shim this process chose and what Namespaces answered, with
// executable and warnOut replaced, until the test ends.
func resetShim(t *testing.T, exe string, warn *bytes.Buffer) {
	t.Helper()
	oldWarn, oldExe := warnOut, executable
	reset := func() {
		shimOnce, shimCached = sync.Once{}, ""
		shimChosen.Store(false)
		nsOnce, nsErr = sync.Once{}, nil
	}
	t.Cleanup(func() {
		warnOut, executable = oldWarn, oldExe
		reset()
	})
	warnOut, executable = warn, func() (string, error) { return exe, nil }
	reset()
}

// loggingShim writes, beside a fake hgate in a new folder, an hgate-sandbox that logs its
// first argument to log (where it may write: not under the sandbox) and runs the real shim,
// this test binary, as hgate-sandbox. It returns the fake hgate, the sibling and the log.
func loggingShim(t *testing.T, real string) (hgate, sib, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(t.TempDir(), "starts")
	sib = filepath.Join(dir, shimName)
	script := "#!/bin/bash\n{ printf '%s\\n' \"${1:0:10}\" >> '" + log + "'; } 2>/dev/null\nexec -a " + shimName + " '" + real + "' \"$@\"\n"
	if err := os.WriteFile(sib, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return fakeHgate(t, dir), sib, log
}

// TestNamespacesProbesTheSiblingOnce: with hgate-sandbox installed and not yet chosen,
// the namespaces probe is also the protocol probe: the sibling starts once outside the
// sandbox (as the shim, with a policy) and never for a probe of its own, and is the shim
// chosen after. The build before this ran `hgate-sandbox --protocol` first, then the
// namespaces probe: two starts outside the sandbox.
func TestNamespacesProbesTheSiblingOnce(t *testing.T) {
	needSandbox(t)
	if err := Namespaces(); err != nil {
		t.Skipf("no namespaces here: %v", err)
	}
	real, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hgate, sib, log := loggingShim(t, real)
	var warn bytes.Buffer
	resetShim(t, hgate, &warn)
	if err := Namespaces(); err != nil {
		t.Fatalf("Namespaces through the sibling: %v", err)
	}
	if got := shimPath(); got != sib {
		t.Errorf("shimPath = %q after the combined probe, want the sibling %q", got, sib)
	}
	data, _ := os.ReadFile(log)
	starts := strings.Fields(string(data))
	// The leader (the sibling again, with --protocol) runs in the sandbox, where the log
	// cannot be written: only starts outside it are logged.
	if len(starts) != 1 || starts[0] != `{"Protocol` {
		t.Errorf("starts of the sibling outside the sandbox: %q, want one, as the shim with a policy", starts)
	}
	if warn.Len() != 0 {
		t.Errorf("warnings: %q", warn.String())
	}
}

// TestNamespacesSkewedSibling: a sibling of another protocol fails the combined probe,
// and shimPath's own probe then refuses it with its one warning; the namespaces are
// probed again with hgate itself as the shim.
func TestNamespacesSkewedSibling(t *testing.T) {
	needSandbox(t)
	if err := Namespaces(); err != nil {
		t.Skipf("no namespaces here: %v", err)
	}
	dir := t.TempDir()
	sib := fakeShim(t, dir, shimName+" protocol 0\n")
	var warn bytes.Buffer
	resetShim(t, fakeHgate(t, dir), &warn)
	err := Namespaces()
	if got := shimPath(); got != self {
		t.Errorf("shimPath = %q, want %q: the skewed sibling must not be used", got, self)
	}
	if err != nil {
		t.Errorf("Namespaces with hgate as its own shim: %v", err)
	}
	if !strings.Contains(warn.String(), sib) || strings.Count(warn.String(), "\n") != 1 {
		t.Errorf("warnings = %q, want one naming %s", warn.String(), sib)
	}
}

// TestNoRulesetNoSelf: a binary that never handed Main the ruleset (every test binary but
// cmd/hgate's and this package's) is never its own shim: started as one, it would run its
// tests again. With no usable hgate-sandbox beside it, Wrap fails and says what to
// install; a skewed sibling is still named in the one warning.
func TestNoRulesetNoSelf(t *testing.T) {
	needSandbox(t)
	for name, sibling := range map[string]string{"no sibling": "", "skewed sibling": shimName + " protocol 0\n"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if sibling != "" {
				fakeShim(t, dir, sibling)
			}
			hgate := fakeHgate(t, dir)
			var warn bytes.Buffer
			oldWarn, oldExe, oldRestrict := warnOut, executable, restrictWith
			defer func() {
				warnOut, executable, restrictWith, shimOnce = oldWarn, oldExe, oldRestrict, sync.Once{}
				shimChosen.Store(false)
			}()
			warnOut, executable, restrictWith = &warn, func() (string, error) { return hgate, nil }, nil
			shimOnce = sync.Once{}

			cmd := exec.Command("/bin/sh", "-c", "echo ran")
			err := Wrap(cmd, Policy{})
			if err == nil || !strings.Contains(err.Error(), "go install ./cmd/...") {
				t.Fatalf("Wrap = %v (cmd.Path %q), want an error saying what to install", err, cmd.Path)
			}
			if sibling != "" && !strings.Contains(warn.String(), filepath.Join(dir, shimName)) {
				t.Errorf("warning %q does not name the skewed sibling", warn.String())
			}
			if strings.Contains(warn.String(), "runs its sandbox itself") {
				t.Errorf("warning %q promises a fallback this binary does not have", warn.String())
			}
		})
	}
}
