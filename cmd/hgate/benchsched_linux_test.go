package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// exitCPU waits for pid to exit without reaping it, and returns the CPU its own threads
// used and the CPU of the children it reaped (/proc/<pid>/stat of the zombie: utime and
// stime, cutime and cstime, in clock ticks of 10 ms).
func exitCPU(pid int) (own, children time.Duration, err error) {
	var info unix.Siginfo
	for {
		err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 0, 0, err
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	f := bytes.Fields(data[i+1:]) // f[0] is field 3
	var t [4]time.Duration
	for k := range t {
		if len(f) <= 11+k {
			return 0, 0, errors.New("malformed /proc stat")
		}
		n, err := strconv.ParseInt(string(f[11+k]), 10, 64) // fields 14 to 17
		if err != nil {
			return 0, 0, err
		}
		t[k] = time.Duration(n) * 10 * time.Millisecond // USER_HZ is 100 on Linux
	}
	return t[0] + t[1], t[2] + t[3], nil
}
