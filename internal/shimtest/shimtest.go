// Package shimtest gives a package's tests the sandbox shim hgate is installed with.
//
// internal/sandbox starts every wrapped task and agent through hgate-sandbox when it lies
// beside the running executable, else through that executable itself when it can be the
// shim (it handed sandbox.Main the ruleset). A test binary that is not (all but cmd/hgate's
// and internal/sandbox's, so that they link without the C toolchain: CONTRIBUTING.md, `TestFewTestBinariesLinkC`)
// needs the hgate-sandbox Install puts beside it, a normal build, so that the tests run the
// sandbox as users do; the others would otherwise start themselves, under -race an
// instrumented binary holding every test, for each sandboxed task. internal/sandbox's own
// tests keep covering the fallback.
package shimtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// pkg is the shim's command, built as the README installs it (CGO_ENABLED=0).
const pkg = "github.com/hgate/hgate/cmd/hgate-sandbox"

// Install builds hgate-sandbox into the folder of the running test binary (again each
// time, from the build cache: a test binary built with -c into a kept folder must not run an
// older shim). A test's TestMain calls it before m.Run; on failure it says why on stderr,
// and the tests' sandboxed commands start the test binary as the shim where it can be
// one, else fail to start, saying so.
func Install() {
	if err := install(); err != nil {
		fmt.Fprintf(os.Stderr, "shimtest: no hgate-sandbox beside the test binary: %v\n", err)
	}
}

func install() error { return build(pkg, "hgate-sandbox") }

// gatewayPkg is the model gateway's command, which the loop starts from beside its own
// executable.
const gatewayPkg = "github.com/hgate/hgate/cmd/hgate-gateway"

// InstallGateway builds hgate-gateway into the folder of the running test binary, as
// Install does hgate-sandbox: a test of the loop then starts the model gateway users
// install. On failure it says why on stderr, and a loop routing a CLI through the gateway
// fails to start.
func InstallGateway() {
	if err := build(gatewayPkg, "hgate-gateway"); err != nil {
		fmt.Fprintf(os.Stderr, "shimtest: no hgate-gateway beside the test binary: %v\n", err)
	}
}

// build builds pkg as name into the folder of the running test binary.
func build(pkg, name string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return Build(filepath.Join(filepath.Dir(exe), name), pkg)
}

// Build puts the command pkg at out, built as the README installs it (CGO_ENABLED=0; flags
// such as -race are go's build flags, and -race keeps cgo on, which it needs). It links the
// command once per build of its sources, not once per test binary: go run keeps the
// commands it links in the Go build cache (Go 1.24 and later) and, given -exec, hands the
// cached file's path to that program instead of running it, here cp. A test binary that
// starts again with nothing changed then pays go's loading of the packages (about 0.5 CPU-s)
// instead of a link (about 1 CPU-s for hgate-sandbox, 4 for hgate). Nothing is written but
// out, and go's own cache by go itself, as go test does; the copy is out's own, so a test
// that writes to it does not touch the cache.
func Build(out, pkg string, flags ...string) error {
	tmp := out + ".building"
	args := append(append([]string{"run", "-exec", "cp"}, flags...), pkg, tmp)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if !slices.Contains(flags, "-race") {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return os.Rename(tmp, out) // whole or not at all: a shim the probe would refuse is never there
}
