// Package ruleset applies a sandbox policy's Landlock ruleset to the calling process, with
// go-landlock: the one package that imports it. Only a binary that can be the sandbox shim
// links it, by handing Restrict to sandbox.Main: hgate-sandbox, hgate (its own shim when
// hgate-sandbox is not beside it) and internal/sandbox's tests. Every other test binary
// starts its tasks through an installed hgate-sandbox and links no C code: go-landlock's
// psx, which sets the ruleset on every thread, has some when cgo is on, and a binary that
// links it is linked by the C toolchain (CONTRIBUTING.md, `TestFewTestBinariesLinkC`).
package ruleset
