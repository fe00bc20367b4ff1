//go:build unix && !linux

package proc

import "os"

// watchExit reaps p where waitid(WNOWAIT) is not available; the group is then killed
// just after the leader is reaped, which leaves a tiny window for pid reuse that the
// Linux version avoids.
func watchExit(p *os.Process) (*os.ProcessState, error) {
	return p.Wait()
}

// fionread asks how many bytes a pipe holds.
const fionread = 0x4004667f // _IOR('f', 127, int) on the BSDs and macOS
