// Package shimtest gives a package's tests the sandbox shim hgate is installed with.
//
// internal/sandbox starts every wrapped task and agent through hgate-sandbox when it lies
// beside the running executable, else through that executable itself. In a test the
// executable is the test binary: under -race an instrumented binary holding every test,
// started again for each sandboxed task (and slower by about a quarter of a loop test's
// time). Install puts a normal build of hgate-sandbox beside the test binary, so that the
// tests run the sandbox as users do. internal/sandbox's own tests keep covering the
// fallback.
package shimtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// pkg is the shim's command, built as the README installs it (CGO_ENABLED=0).
const pkg = "github.com/hgate/hgate/cmd/hgate-sandbox"

// Install builds hgate-sandbox into the folder of the running test binary (again each
// time, from the build cache: a test binary built with -c into a kept folder must not run an
// older shim). A test's TestMain calls it after sandbox.Main and before m.Run; on failure it says
// why on stderr and the tests go on with the test binary as the shim, as before.
func Install() {
	if err := install(); err != nil {
		fmt.Fprintf(os.Stderr, "shimtest: the test binary stays the sandbox shim: %v\n", err)
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
	out := filepath.Join(filepath.Dir(exe), name)
	tmp := out + ".building"
	cmd := exec.Command("go", "build", "-o", tmp, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
	}
	return os.Rename(tmp, out) // whole or not at all: a shim the probe would refuse is never there
}
