package benchmark

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hgate/hgate/internal/fsafe"
)

// harborAgentTimeouts gives every asked task of a local dataset an agent timeout: Harbor
// runs a task whose task.toml sets no [agent] timeout_sec without a bound on its agent,
// so such a task's task.toml in the room gets timeout_sec = benchmark.task_timeout (in
// seconds). Only in a clean room (TempRoot set: Dir is hgate's private copy of the
// tree), and by writing a new file over the copy's name, never through it; outside a
// room the task files are the user's and are left alone (the run as a whole is still
// bounded by task_timeout per round). It returns the tasks it gave a timeout.
func (r *Runner) harborAgentTimeouts(tasks []string) ([]string, error) {
	h := r.Config.Harbor
	if h.Path == "" || r.TempRoot == "" || r.Config.TaskTimeout <= 0 {
		return nil, nil
	}
	secs := strconv.FormatInt(int64((r.Config.TaskTimeout+time.Second-1)/time.Second), 10)
	// The room's copy of the dataset is written by descriptor: a task of an earlier request
	// in the same room may have left a link where a task.toml was.
	root, err := fsafe.OpenRoot(r.Dir)
	if err != nil {
		return nil, fmt.Errorf("benchmark: harbor: %w", err)
	}
	defer root.Close()
	var set []string
	for _, id := range tasks {
		name := path.Join(h.Path, id, "task.toml")
		data, err := root.ReadFile(name, 1<<20)
		if err != nil {
			continue // harbor says what is wrong with the task
		}
		out, changed := withAgentTimeout(data, secs)
		if !changed {
			continue
		}
		if err := root.Replace(name, bytes.NewReader(out), 0o644); err != nil {
			return set, fmt.Errorf("benchmark: harbor: %s: %w", id, err)
		}
		set = append(set, id)
	}
	return set, nil
}

// withAgentTimeout adds timeout_sec to a task.toml's [agent] table (adding the table when
// there is none) unless it has one; false when it has.
func withAgentTimeout(data []byte, secs string) ([]byte, bool) {
	lines := strings.Split(string(data), "\n")
	agent := -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			if agent >= 0 {
				break // the [agent] table ended without timeout_sec
			}
			if t == "[agent]" {
				agent = i
			}
			continue
		}
		if agent >= 0 && strings.HasPrefix(strings.ReplaceAll(t, " ", ""), "timeout_sec=") {
			return data, false
		}
	}
	line := "timeout_sec = " + secs + " # set by hgate: benchmark.task_timeout (the task set none)"
	if agent < 0 {
		out := bytes.TrimRight(data, "\n")
		return append(out, []byte("\n\n[agent]\n"+line+"\n")...), true
	}
	lines = append(lines[:agent+1], append([]string{line}, lines[agent+1:]...)...)
	return []byte(strings.Join(lines, "\n")), true
}
