package proc

import (
	"bytes"
	"errors"
	"strconv"
)

// Stat is what hgate reads of /proc/<pid>/stat.
type Stat struct {
	State      byte   // field 3: R, S, Z...
	PPid       int    // field 4
	StartTicks uint64 // field 22: start time in clock ticks since boot; with the pid it names a process until reboot
}

// ParseStat parses the content of a /proc/<pid>/stat file (proc(5)).
func ParseStat(data []byte) (Stat, error) {
	// Field 2 is the command name in parentheses and may itself hold spaces and
	// parentheses: count fields from the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, errors.New("malformed /proc stat: no command name")
	}
	fields := bytes.Fields(data[i+1:]) // fields[0] is field 3, the state
	const ppidField, startField = 4 - 3, 22 - 3
	if len(fields) <= startField || len(fields[0]) != 1 {
		return Stat{}, errors.New("malformed /proc stat: too few fields")
	}
	ppid, err := strconv.Atoi(string(fields[ppidField]))
	if err != nil {
		return Stat{}, errors.New("malformed /proc stat: parent pid is not a number")
	}
	ticks, err := strconv.ParseUint(string(fields[startField]), 10, 64)
	if err != nil {
		return Stat{}, errors.New("malformed /proc stat: start time is not a number")
	}
	return Stat{State: fields[0][0], PPid: ppid, StartTicks: ticks}, nil
}
