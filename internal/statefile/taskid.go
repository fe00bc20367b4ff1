package statefile

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
)

// The task-id rule, in one place: an id becomes a trace file name and a
// command argument, so it must be a plain name. The runner (CheckTaskID) and
// the state files (TaskIDProblem) word it to fit their messages.

// taskIDFault says what is wrong with id in words that follow "task id", or
// "" when it is a valid name.
func taskIDFault(id string) string {
	switch {
	case id == "":
		return "is empty"
	case id == "." || id == "..":
		return strconv.Quote(id) + " is not a name"
	case strings.Contains(id, "/"):
		return strconv.Quote(clip(id)) + ` contains "/"`
	case strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return strconv.Quote(clip(id)) + " contains whitespace or a control character"
	}
	return ""
}

// CheckTaskID reports whether id can name a task: not empty, no whitespace
// or control characters, no "/", and not "." or "..".
func CheckTaskID(id string) error {
	if f := taskIDFault(id); f != "" {
		return errors.New("task id " + f)
	}
	return nil
}

// TaskIDProblem says what is wrong with a task id read from a state file, or
// "" when it is fine.
func TaskIDProblem(id string) string {
	switch f := taskIDFault(id); {
	case f == "":
		return ""
	case id == "":
		return "empty task id (expected a task name)"
	default:
		return f + " (expected a task name)"
	}
}
