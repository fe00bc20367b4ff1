package benchmark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hgate/hgate/internal/fsafe"
)

// harborTimeoutSecs is benchmark.task_timeout in whole seconds, rounded up.
func (r *Runner) harborTimeoutSecs() int64 {
	return int64((r.Config.TaskTimeout + time.Second - 1) / time.Second)
}

// harborNeedsJobTimeout reports whether the run must carry an agent timeout in a job
// config (harborJobConfig): for a registered dataset, whose tasks hgate does not see, and
// for a local one outside a clean room, whose task files are the user's, when an asked
// task sets none. In a room, harborAgentTimeouts wrote it into the tasks instead.
func (r *Runner) harborNeedsJobTimeout(tasks []string) bool {
	h := r.Config.Harbor
	if r.Config.TaskTimeout <= 0 {
		return false
	}
	if h.Path == "" {
		return true
	}
	if r.TempRoot != "" {
		return false
	}
	root, err := fsafe.OpenRoot(r.Dir) // the user's files: read by descriptor, never written
	if err != nil {
		return true
	}
	defer root.Close()
	for _, id := range tasks {
		data, err := root.ReadFile(path.Join(h.Path, id, "task.toml"), 1<<20)
		if err != nil {
			continue // harbor says what is wrong with the task
		}
		if _, lacks := withAgentTimeout(data, "0"); lacks {
			return true
		}
	}
	return false
}

// harborJobConfig writes, into hgate's fresh jobs folder, the job config (harbor run -c)
// that names the agent with an agent timeout of benchmark.task_timeout. Harbor 0.20 to
// 0.22 have no command-line flag for an agent timeout on `harbor run` (only multipliers
// of the task's own, which leave a task without one unbounded; `harbor exec
// --agent-timeout` is another command): the job config's agents[].override_timeout_sec
// is the one way, and -a would replace the config's agents, so the agent and model go
// in the config instead of -a and -m. It replaces the tasks' own agent timeouts too.
func (r *Runner) harborJobConfig(jobsDir string) (string, error) {
	h := r.Config.Harbor
	agent := map[string]any{"name": h.Agent, "override_timeout_sec": r.harborTimeoutSecs()}
	if h.Model != "" {
		agent["model_name"] = h.Model
	}
	data, err := json.Marshal(map[string]any{"agents": []any{agent}})
	if err != nil {
		return "", err
	}
	// By descriptor: harbor runs of other requests may write the traces folder the jobs
	// folder is in.
	root, err := fsafe.OpenRoot(jobsDir)
	if err == nil {
		err = root.WriteFile("hgate-job.json", append(data, '\n'), 0o644)
		root.Close()
	}
	if err != nil {
		return "", fmt.Errorf("benchmark: harbor job config: %w", err)
	}
	return filepath.Join(jobsDir, "hgate-job.json"), nil
}

// harborAgentTimeouts gives every asked task of a local dataset an agent timeout: Harbor
// runs a task whose task.toml sets no [agent] timeout_sec without a bound on its agent,
// so such a task's task.toml in the room gets timeout_sec = benchmark.task_timeout (in
// seconds). Only in a clean room (TempRoot set: Dir is hgate's private copy of the
// tree), and by writing a new file over the copy's name, never through it; outside a
// room the task files are the user's and are left alone (the run as a whole is still
// bounded by task_timeout per round, and harborJobConfig gives the agent one). It returns the tasks it gave a timeout.
func (r *Runner) harborAgentTimeouts(tasks []string) ([]string, error) {
	h := r.Config.Harbor
	if h.Path == "" || r.TempRoot == "" || r.Config.TaskTimeout <= 0 {
		return nil, nil
	}
	secs := strconv.FormatInt(r.harborTimeoutSecs(), 10)
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
