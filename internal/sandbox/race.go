//go:build race

package sandbox

// raceEnv is what Wrap gives the shim in a race build (the tests' binaries), when the
// command's environment does not set GORACE itself: the race runtime sleeps a second at the
// exit of every process (atexit_sleep_ms, default 1000), and each wrapped command starts one
// or two shims. The shim unsets it before it execs the command, whose environment stays as
// the caller made it.
const raceEnv = "GORACE=atexit_sleep_ms=0"
