//go:build !race

package sandbox

// raceEnv is empty outside race builds: Wrap adds nothing to the shim's environment.
const raceEnv = ""
