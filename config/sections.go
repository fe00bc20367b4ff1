package config

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// The keys of each section, in the order DESIGN.md §6 shows them; messages list
// them in this order.
var (
	rootKeys      = []string{"allow", "ignore", "workspace", "file_guard", "benchmark", "split", "suite", "gate", "loop", "clean_room"}
	benchmarkKeys = []string{"tasks", "run", "batch", "concurrency", "task_timeout", "timeout_policy", "env"}
	tasksKeys     = []string{"glob", "file", "command"}
	splitKeys     = []string{"test_fraction", "seed"}
	suiteKeys     = []string{"threshold"}
	gateKeys      = []string{"trials", "margin", "confidence"}
	trialsKeys    = []string{"min", "max"}
	loopKeys      = []string{"agent", "program", "attempt_timeout", "iterations", "patience", "stop_score", "until", "for", "repair_attempts", "max_consecutive_crashes", "sandbox"}
	sandboxKeys   = []string{"enabled", "writable", "hidden"}
	cleanRoomKeys = []string{"enabled", "carry", "env", "home", "writable", "caches"}
)

const (
	allowExample = "[agent/agent.py, PROGRAM.md]"
	runExample   = "[sh, tasks/{task}/check.sh]"
	batchExample = "[python, run_all.py, --tasks, {tasks}]"
)

func (d *decoder) decodeRoot(root *yaml.Node, cfg *Config) {
	if r := resolve(root); r.Kind != yaml.MappingNode {
		d.failf(root, "", "%s is not a mapping of keys (expected lines such as allow: %s)", describe(root), allowExample)
		return
	}
	m, _ := d.mapping(root, "", rootKeys)

	if e, ok := m["allow"]; ok {
		if list, ok := d.textList(e.val, "allow", "a list of paths the agent may change, e.g. "+allowExample); ok {
			if len(list) == 0 {
				d.failf(e.key, "allow", "empty (expected at least one path the agent may change, e.g. %s)", allowExample)
			}
			d.patterns(e.val, "allow", list, true)
			cfg.Allow = list
		}
	} else {
		d.failf(nil, "allow", "missing (expected the paths the agent may change, e.g. allow: %s)", allowExample)
	}
	if e, ok := m["ignore"]; ok {
		if list, ok := d.textList(e.val, "ignore", "a list of gitignore-style patterns, e.g. [data/, \"*.log\"]"); ok {
			d.patterns(e.val, "ignore", list, true)
			cfg.Ignore = list
		}
	}
	if e, ok := m["workspace"]; ok {
		if s, ok := d.text(e.val, "workspace", "a folder inside the repository, e.g. workspace"); ok {
			cfg.Workspace = d.workspace(e.val, s)
		}
	}
	if e, ok := m["file_guard"]; ok {
		cfg.FileGuard = d.fileGuard(e.val, "file_guard")
	}
	if e, ok := m["benchmark"]; ok {
		d.benchmark(e, &cfg.Benchmark)
	} else {
		d.failf(nil, "benchmark", "missing (expected tasks: and run: or batch:, e.g. benchmark: {tasks: {glob: \"tasks/*\"}, run: %s})", runExample)
	}
	if e, ok := m["split"]; ok {
		d.split(e, &cfg.Split)
	}
	if e, ok := m["suite"]; ok {
		d.suite(e, &cfg.Suite)
	}
	if e, ok := m["gate"]; ok {
		d.gate(e, &cfg.Gate)
	}
	if e, ok := m["loop"]; ok {
		d.loop(e, &cfg.Loop)
	}
	if e, ok := m["clean_room"]; ok {
		d.cleanRoom(e, &cfg.CleanRoom, cfg.Benchmark.Env)
	}
}

// workspace checks the workspace folder and returns it cleaned.
func (d *decoder) workspace(n *yaml.Node, s string) string {
	const p = "workspace"
	switch clean := path.Clean(strings.TrimSpace(s)); {
	case strings.TrimSpace(s) == "":
		d.failf(n, p, "empty (expected a folder inside the repository, e.g. workspace)")
	case hasControl(s):
		d.failf(n, p, "%q holds a control character such as a line break (expected a folder name)", s)
	case isAbs(s):
		d.failf(n, p, "%q is an absolute path (expected a folder relative to the repository root, e.g. workspace)", s)
	case clean == ".":
		d.failf(n, p, "%q is the repository root itself (expected a folder inside it, e.g. workspace)", s)
	case clean == ".." || strings.HasPrefix(clean, "../"):
		d.failf(n, p, "%q leaves the repository (expected a folder inside it, e.g. workspace)", s)
	case clean == ".git" || strings.HasPrefix(clean, ".git/"):
		d.failf(n, p, "%q is inside .git (expected a folder of the worktree, e.g. workspace)", s)
	default:
		return clean
	}
	return ""
}

func (d *decoder) benchmark(e entry, b *Benchmark) {
	m, ok := d.mapping(e.val, "benchmark", benchmarkKeys)
	if !ok {
		return
	}
	if t, ok := m["tasks"]; ok {
		d.tasks(t, &b.Tasks)
	} else {
		d.failf(e.key, "benchmark.tasks", "missing (expected where task ids come from, e.g. tasks: {glob: \"tasks/*\"})")
	}

	run, hasRun := m["run"]
	batch, hasBatch := m["batch"]
	switch {
	case hasRun && hasBatch:
		d.failf(batch.key, "benchmark", "both run (line %d) and batch are set (expected exactly one: run for a command per task, batch for one command for all tasks)", run.key.Line)
	case !hasRun && !hasBatch:
		d.failf(e.key, "benchmark", "neither run nor batch is set (expected run: %s or batch: %s)", runExample, batchExample)
	}
	if hasRun {
		b.Run = d.command(run.val, "benchmark.run", runExample, Placeholders)
	}
	if hasBatch {
		b.Batch = d.command(batch.val, "benchmark.batch", batchExample, Placeholders)
	}

	if v, ok := m["concurrency"]; ok {
		if n, ok := d.smallInt(v.val, "benchmark.concurrency", "4"); ok {
			if n < 1 {
				d.failf(v.val, "benchmark.concurrency", "%d is less than 1 (expected at least 1 task at a time, e.g. 4)", n)
			}
			b.Concurrency = n
		}
	}
	if v, ok := m["task_timeout"]; ok {
		if t, ok := d.duration(v.val, "benchmark.task_timeout", "10m"); ok {
			if t <= 0 {
				d.failf(v.val, "benchmark.task_timeout", "%s is not positive (expected e.g. 10m)", describe(v.val))
			}
			b.TaskTimeout = t
		}
	}
	if v, ok := m["timeout_policy"]; ok {
		if s, ok := d.text(v.val, "benchmark.timeout_policy", "agent or infra"); ok {
			if s != "agent" && s != "infra" {
				hint := ""
				if c := closest(s, []string{"agent", "infra"}); c != "" {
					hint = ", did you mean " + c + "?"
				}
				d.failf(v.val, "benchmark.timeout_policy", "%s is not a policy%s (expected agent: a task without a reward scores 0.0, or infra: it is left out of val_score)", describe(v.val), hint)
			}
			b.TimeoutPolicy = s
		}
	}
	if v, ok := m["env"]; ok {
		b.Env = d.env(v.val, "benchmark.env")
	}
}

func (d *decoder) tasks(e entry, t *Tasks) {
	const p = "benchmark.tasks"
	m, ok := d.mapping(e.val, p, tasksKeys)
	if !ok {
		return
	}
	var set []string
	for _, k := range tasksKeys {
		if _, ok := m[k]; ok {
			set = append(set, k)
		}
	}
	switch len(set) {
	case 0:
		d.failf(e.key, p, "none of glob, file or command is set (expected one, e.g. {glob: \"tasks/*\"})")
	case 1:
	case 2:
		d.failf(e.key, p, "both %s and %s are set (expected exactly one of glob, file, command)", set[0], set[1])
	default:
		d.failf(e.key, p, "glob, file and command are all set (expected exactly one of them)")
	}
	if v, ok := m["glob"]; ok {
		if s, ok := d.text(v.val, p+".glob", "a pattern such as tasks/*"); ok {
			if msg := d.checkPattern(s, false); msg != "" {
				d.failf(v.val, p+".glob", "%s", msg)
			}
			t.Glob = s
		}
	}
	if v, ok := m["file"]; ok {
		if s, ok := d.text(v.val, p+".file", "a file holding one task id a line, e.g. tasks.txt"); ok {
			if msg := d.checkRelPath(s); msg != "" {
				d.failf(v.val, p+".file", "%s", msg)
			}
			t.File = s
		}
	}
	if v, ok := m["command"]; ok {
		t.Command = d.command(v.val, p+".command", "[sh, list_tasks.sh]", nil)
	}
}

// command decodes a command template: a non-empty list whose first element names
// a program. placeholders lists the {name} tokens allowed; nil skips that check.
func (d *decoder) command(n *yaml.Node, p, example string, placeholders []string) []string {
	list, ok := d.textList(n, p, "a command as a list, e.g. "+example)
	if !ok {
		return nil
	}
	if len(list) == 0 {
		d.failf(n, p, "empty (expected a command, e.g. %s)", example)
		return nil
	}
	if strings.TrimSpace(list[0]) == "" {
		d.failf(resolve(n).Content[0], p+"[0]", "empty (expected the program to run, e.g. %s)", example)
	}
	if placeholders != nil {
		for i, arg := range list {
			d.placeholders(resolve(n).Content[i], fmt.Sprintf("%s[%d]", p, i), arg, placeholders)
		}
	}
	return list
}

// placeholderRE finds {name} tokens; ${NAME} is the shell's and is left alone.
var placeholderRE = lazyRegexp(`\$?\{([A-Za-z_][A-Za-z0-9_.-]*)\}`)

func (d *decoder) placeholders(n *yaml.Node, p, arg string, allowed []string) {
	var unknown []string
	for _, m := range placeholderRE().FindAllStringSubmatch(arg, -1) {
		if strings.HasPrefix(m[0], "$") || contains(allowed, m[1]) || contains(unknown, "{"+m[1]+"}") {
			continue
		}
		unknown = append(unknown, "{"+m[1]+"}")
	}
	if len(unknown) == 0 {
		return
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = "{" + a + "}"
	}
	noun := "placeholder"
	if len(unknown) > 1 {
		noun = "placeholders"
	}
	hint := ""
	switch {
	case len(unknown) == 1 && unknown[0] == "{"+PromptFilePlaceholder+"}":
		hint = ", which only loop.agent has"
	case len(unknown) == 1:
		if c := closest(strings.Trim(unknown[0], "{}"), allowed); c != "" {
			hint = ", did you mean {" + c + "}?"
		}
	}
	d.failf(n, p, "unknown %s %s%s (expected %s)", noun, strings.Join(unknown, ", "), hint, strings.Join(names, ", "))
}

var envNameRE = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

// env decodes a mapping of environment variable names to values.
func (d *decoder) env(n *yaml.Node, p string) map[string]string {
	m, ok := d.mapping(n, p, nil)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	// In file order, so that messages come out the same way every time.
	sort.Slice(names, func(i, j int) bool {
		a, b := m[names[i]].key, m[names[j]].key
		return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
	})
	for _, name := range names {
		e := m[name]
		full := join(p, displayKey(name))
		if !d.envName(e.key, full, name) {
			continue
		}
		if isNull(e.val) {
			out[name] = "" // `KEY:` with nothing after it reads as an empty value
			continue
		}
		if s, ok := d.text(e.val, full, "a value, e.g. "+name+": \"1\""); ok {
			out[name] = s
		}
	}
	return out
}

// hgateVars are set by the benchmark runner for every task.
var hgateVars = []string{"HGATE_TASK", "HGATE_TASKS", "HGATE_SPLIT", "HGATE_TRACE_DIR"}

func (d *decoder) envName(n *yaml.Node, p, name string) bool {
	if !envNameRE().MatchString(name) {
		d.failf(n, p, "%q is not a variable name (expected letters, digits and _, e.g. PYTHONHASHSEED)", name)
		return false
	}
	if contains(hgateVars, name) {
		d.failf(n, p, "%s is set by hgate for each task (expected another name)", name)
		return false
	}
	return true
}

func (d *decoder) split(e entry, s *Split) {
	m, ok := d.mapping(e.val, "split", splitKeys)
	if !ok {
		return
	}
	if v, ok := m["test_fraction"]; ok {
		if f, ok := d.number(v.val, "split.test_fraction", "0.3"); ok {
			if f <= 0 || f >= 1 {
				d.failf(v.val, "split.test_fraction", "%s is not between 0 and 1 (expected a fraction such as 0.3, neither 0 nor 1)", describe(v.val))
			}
			s.TestFraction = f
		}
	}
	if v, ok := m["seed"]; ok {
		if n, ok := d.integer(v.val, "split.seed", "42"); ok {
			s.Seed = n
		}
	}
}

func (d *decoder) suite(e entry, s *Suite) {
	m, ok := d.mapping(e.val, "suite", suiteKeys)
	if !ok {
		return
	}
	if v, ok := m["threshold"]; ok {
		if f, ok := d.number(v.val, "suite.threshold", "0.8"); ok {
			if f < 0 || f > 1 {
				d.failf(v.val, "suite.threshold", "%s is outside 0..1 (expected a pass rate such as 0.8)", describe(v.val))
			}
			s.Threshold = f
		}
	}
}

func (d *decoder) gate(e entry, g *Gate) {
	m, ok := d.mapping(e.val, "gate", gateKeys)
	if !ok {
		return
	}
	if v, ok := m["trials"]; ok {
		if t, ok := d.mapping(v.val, "gate.trials", trialsKeys); ok {
			for _, k := range trialsKeys {
				x, ok := t[k]
				if !ok {
					continue
				}
				n, ok := d.smallInt(x.val, "gate.trials."+k, "8")
				if !ok {
					continue
				}
				if n < 1 || n > MaxTrials {
					d.failf(x.val, "gate.trials."+k, "%d is outside 1..%d (expected a number of trials per test task, e.g. 8)", n, MaxTrials)
					continue
				}
				if k == "min" {
					g.TrialsMin = n
				} else {
					g.TrialsMax = n
				}
			}
			if _, ok := t["max"]; !ok && g.TrialsMin > g.TrialsMax {
				g.TrialsMax = g.TrialsMin // max defaults to min
			}
			if g.TrialsMin > g.TrialsMax {
				d.failf(v.val, "gate.trials", "min %d is above max %d (expected min <= max)", g.TrialsMin, g.TrialsMax)
			}
		}
	}
	if v, ok := m["margin"]; ok {
		if f, ok := d.number(v.val, "gate.margin", "0.02"); ok {
			if f < 0 || f >= 1 {
				d.failf(v.val, "gate.margin", "%s is outside 0..1 (expected val_score points the candidate may lose, e.g. 0.02)", describe(v.val))
			}
			g.Margin = f
		}
	}
	if v, ok := m["confidence"]; ok {
		if f, ok := d.number(v.val, "gate.confidence", "0.95"); ok {
			if f < 0.5 || f >= 1 {
				d.failf(v.val, "gate.confidence", "%s is outside 0.5..1 (expected a one-sided confidence such as 0.95)", describe(v.val))
			}
			g.Confidence = f
		}
	}
}

func (d *decoder) loop(e entry, l *Loop) {
	m, ok := d.mapping(e.val, "loop", loopKeys)
	if !ok {
		return
	}
	if v, ok := m["agent"]; ok {
		l.Agent = d.agent(v.val)
	}
	if v, ok := m["program"]; ok {
		if s, ok := d.text(v.val, "loop.program", "the agent's instructions file, e.g. PROGRAM.md"); ok {
			if msg := d.checkRelPath(s); msg != "" {
				d.failf(v.val, "loop.program", "%s", msg)
			}
			l.Program = s
		}
	}
	if v, ok := m["attempt_timeout"]; ok {
		if t, ok := d.duration(v.val, "loop.attempt_timeout", "30m"); ok {
			if t <= 0 {
				d.failf(v.val, "loop.attempt_timeout", "%s is not positive (expected e.g. 30m)", describe(v.val))
			}
			l.AttemptTimeout = t
		}
	}
	counts := []struct {
		key     string
		dst     *int
		min     int
		example string
		meaning string
	}{
		{"iterations", &l.Iterations, 0, "20", "0 for no limit"},
		{"patience", &l.Patience, 0, "5", "0 for no limit"},
		{"repair_attempts", &l.RepairAttempts, 0, "1", "0 for none"},
		{"max_consecutive_crashes", &l.MaxConsecutiveCrashes, 1, "3", "at least 1"},
	}
	for _, c := range counts {
		v, ok := m[c.key]
		if !ok {
			continue
		}
		p := "loop." + c.key
		if n, ok := d.smallInt(v.val, p, c.example); ok {
			if n < c.min {
				d.failf(v.val, p, "%d is less than %d (expected e.g. %s; %s)", n, c.min, c.example, c.meaning)
			}
			*c.dst = n
		}
	}
	if v, ok := m["stop_score"]; ok && !isNull(v.val) {
		if f, ok := d.number(v.val, "loop.stop_score", "0.95"); ok {
			if f < 0 || f > 1 {
				d.failf(v.val, "loop.stop_score", "%s is outside 0..1 (expected a val_score such as 0.95)", describe(v.val))
			}
			l.StopScore = &f
		}
	}
	if v, ok := m["until"]; ok && !isNull(v.val) {
		if s, ok := d.text(v.val, "loop.until", "a time of day such as \"07:00\""); ok {
			if hm, ok := clockTime(s); ok {
				l.Until = hm
			} else {
				d.failf(v.val, "loop.until", "%s is not a time of day (expected HH:MM on a 24-hour clock, e.g. \"07:00\")", describe(v.val))
			}
		}
	}
	if v, ok := m["for"]; ok && !isNull(v.val) {
		if t, ok := d.duration(v.val, "loop.for", "8h"); ok {
			if t < 0 {
				d.failf(v.val, "loop.for", "%s is negative (expected e.g. 8h, or 0 for no limit)", describe(v.val))
			}
			l.For = t
		}
	}
	if v, ok := m["sandbox"]; ok {
		d.sandbox(v, &l.Sandbox)
	}
}

// sandbox decodes loop.sandbox.
func (d *decoder) sandbox(e entry, s *Sandbox) {
	m, ok := d.mapping(e.val, "loop.sandbox", sandboxKeys)
	if !ok {
		return
	}
	if v, ok := m["enabled"]; ok {
		if b, ok := d.boolean(v.val, "loop.sandbox.enabled"); ok {
			s.Enabled = b
		}
	}
	lists := []struct {
		key      string
		dst      *[]string
		expected string
	}{
		{"writable", &s.Writable, "a list of paths the agent may write, e.g. [~/.claude, ~/.claude.json]"},
		{"hidden", &s.Hidden, "a list of paths the agent may not read, e.g. [/data/test-answers]"},
	}
	for _, l := range lists {
		v, ok := m[l.key]
		if !ok {
			continue
		}
		p := "loop.sandbox." + l.key
		list, ok := d.textList(v.val, p, l.expected)
		if !ok {
			continue
		}
		for i, item := range list {
			if msg := checkSandboxPath(item); msg != "" {
				d.failf(resolve(v.val).Content[i], fmt.Sprintf("%s[%d]", p, i), "%s", msg)
			}
		}
		*l.dst = list
	}
}

// checkSandboxPath returns what is wrong with a loop.sandbox path, or "": it is
// absolute, starts with ~/ (the home folder), or is relative to the repository
// root without leaving it.
func checkSandboxPath(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "empty (expected a path such as ~/.claude or /data/test)"
	case s == "~" || strings.HasPrefix(s, "~/") || path.IsAbs(s):
		return ""
	case strings.HasPrefix(s, "~"):
		return fmt.Sprintf("%q names another user's home folder (expected ~/ for yours, or an absolute path)", s)
	case path.Clean(s) == "." || path.Clean(s) == ".." || strings.HasPrefix(path.Clean(s), "../"):
		return fmt.Sprintf("%q is not inside the repository (expected a path below the repository root, ~/..., or an absolute path)", s)
	}
	return ""
}

// agent decodes loop.agent: a string is one element (a preset name or a shell
// command line for the loop package to interpret), a list is an argv.
func (d *decoder) agent(n *yaml.Node) []string {
	const p = "loop.agent"
	const example = "claude, or a command such as [sh, agent.sh, {prompt_file}]"
	allowed := append(append([]string{}, Placeholders...), PromptFilePlaceholder)
	r := resolve(n)
	if r != nil && r.Kind == yaml.SequenceNode {
		return d.command(n, p, "[sh, agent.sh, {prompt_file}]", allowed)
	}
	s, ok := d.text(n, p, example)
	if !ok {
		return nil
	}
	if strings.TrimSpace(s) == "" {
		d.failf(n, p, "empty (expected %s)", example)
		return nil
	}
	d.placeholders(n, p, s, allowed)
	return []string{s}
}

var clockRE = lazyRegexp(`^([01]?[0-9]|2[0-3]):([0-5][0-9])$`)

// clockTime checks "H:MM" or "HH:MM" (24-hour) and returns it as "HH:MM".
func clockTime(s string) (string, bool) {
	m := clockRE().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", false
	}
	h := m[1]
	if len(h) == 1 {
		h = "0" + h
	}
	return h + ":" + m[2], true
}

func (d *decoder) cleanRoom(e entry, c *CleanRoom, benchEnv map[string]string) {
	m, ok := d.mapping(e.val, "clean_room", cleanRoomKeys)
	if !ok {
		return
	}
	if v, ok := m["enabled"]; ok {
		if b, ok := d.boolean(v.val, "clean_room.enabled"); ok {
			c.Enabled = b
		}
	}
	if v, ok := m["carry"]; ok {
		c.Carry = d.treeFolders(v.val, "clean_room.carry", "a list of ignored paths to copy, e.g. [data/, .venv/]", "data/ or .venv/")
	}
	if v, ok := m["env"]; ok {
		if list, ok := d.textList(v.val, "clean_room.env", "a list of variable names, e.g. [PATH, OPENAI_API_KEY]"); ok {
			for i, s := range list {
				d.envName(resolve(v.val).Content[i], fmt.Sprintf("clean_room.env[%d]", i), s)
			}
			c.Env = list
		}
	}
	if v, ok := m["home"]; ok && !isNull(v.val) {
		if s, ok := d.text(v.val, "clean_room.home", "a folder to use as HOME"); ok {
			c.Home = s
		}
	}
	if v, ok := m["writable"]; ok {
		c.Writable = d.treeFolders(v.val, "clean_room.writable", "a list of folders tasks may write, e.g. [build/, .cache/]", "build/ or .cache/")
	}
	if v, ok := m["caches"]; ok {
		c.Caches = d.caches(v.val, "clean_room.caches", benchEnv)
	}
}

// cacheNameRE is one folder name that cannot be ".", ".." or hidden, nor hold a
// separator: a cache stays inside hgate's caches folder.
var cacheNameRE = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// caches decodes clean_room.caches: variable name to cache name.
func (d *decoder) caches(n *yaml.Node, p string, benchEnv map[string]string) map[string]string {
	m, ok := d.mapping(n, p, nil)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := m[names[i]].key, m[names[j]].key
		return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
	})
	out := make(map[string]string, len(m))
	for _, name := range names {
		e := m[name]
		full := join(p, displayKey(name))
		if !d.envName(e.key, full, name) {
			continue
		}
		switch {
		case name == "HOME" || name == "TMPDIR":
			d.failf(e.key, full, "%s is set by hgate for each task (expected a cache variable, e.g. GOCACHE)", name)
			continue
		case strings.HasPrefix(name, "GIT_"):
			d.failf(e.key, full, "GIT_* variables never reach tasks (expected a cache variable, e.g. GOCACHE)")
			continue
		}
		if _, dup := benchEnv[name]; dup {
			d.failf(e.key, full, "%s is also set by benchmark.env (expected one of the two)", name)
			continue
		}
		s, ok := d.text(e.val, full, "a cache name, e.g. "+name+": go-build")
		if !ok {
			continue
		}
		if !cacheNameRE().MatchString(s) {
			d.failf(e.val, full, "%q is not a cache name (expected one folder name of letters, digits, ., _ and -, not starting with . or -, e.g. go-build)", s)
			continue
		}
		out[name] = s
	}
	return out
}

// treeFolders decodes a list of paths inside the repository (clean_room.carry, .writable):
// each a pattern relative to the root, never the whole repository.
func (d *decoder) treeFolders(n *yaml.Node, key, expected, example string) []string {
	list, ok := d.textList(n, key, expected)
	if !ok {
		return nil
	}
	for i, s := range list {
		p := fmt.Sprintf("%s[%d]", key, i)
		item := resolve(n).Content[i]
		if strings.TrimSpace(s) != "" && path.Clean(s) == "." {
			d.failf(item, p, "%q is the whole repository (expected a folder such as %s)", s, example)
		} else if msg := d.checkPattern(s, false); msg != "" {
			d.failf(item, p, "%s", msg)
		}
	}
	return list
}

// patterns checks a list of gitignore-style patterns; negatable allows a leading "!".
func (d *decoder) patterns(n *yaml.Node, p string, list []string, negatable bool) {
	r := resolve(n)
	for i, s := range list {
		if msg := d.checkPattern(s, negatable); msg != "" {
			d.failf(r.Content[i], fmt.Sprintf("%s[%d]", p, i), "%s", msg)
		}
	}
}

// checkPattern returns what is wrong with a gitignore-style pattern relative to
// the repository root, or "". A leading "/" is refused: in hgate.yaml it reads as
// an absolute path far more often than as gitignore's anchor, and a pattern with
// a slash inside is anchored to the root anyway.
func (d *decoder) checkPattern(s string, negatable bool) string {
	body := s
	if negatable {
		body = strings.TrimPrefix(body, "!")
	}
	switch {
	case strings.TrimSpace(body) == "":
		return "empty (expected a path pattern, e.g. agent/*.py)"
	case hasControl(s):
		return fmt.Sprintf("%q holds a control character such as a line break (expected one pattern)", s)
	case isAbs(body):
		return d.absolute(s, body)
	case strings.HasPrefix(body, "#"):
		return fmt.Sprintf("%q starts with #, which gitignore reads as a comment (expected \\# for a literal #)", s)
	}
	if msg := checkComponents(s, strings.TrimSuffix(body, "/")); msg != "" {
		return msg
	}
	if _, err := path.Match(body, ""); err != nil {
		return fmt.Sprintf("%q is not a valid pattern: an unclosed [ or a trailing \\ (expected e.g. src/*.py)", s)
	}
	return ""
}

// checkRelPath returns what is wrong with a file path relative to the repository
// root, or "".
func (d *decoder) checkRelPath(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "empty (expected a path relative to the repository root)"
	case hasControl(s):
		return fmt.Sprintf("%q holds a control character such as a line break (expected a file name)", s)
	case isAbs(s):
		return d.absolute(s, s)
	}
	return checkComponents(s, s)
}

func checkComponents(orig, body string) string {
	for _, c := range strings.Split(body, "/") {
		if c == ".." {
			return fmt.Sprintf("%q leaves the repository (expected a path inside it, without \"..\")", orig)
		}
	}
	for _, c := range strings.Split(body, "/") {
		if c == "." || c == "" {
			return fmt.Sprintf("%q is not a clean path (expected %q)", orig, cleanSuggestion(orig))
		}
	}
	return ""
}

func cleanSuggestion(s string) string {
	neg := strings.HasPrefix(s, "!")
	c := path.Clean(strings.TrimPrefix(s, "!"))
	if strings.HasSuffix(s, "/") && c != "." {
		c += "/"
	}
	if neg {
		c = "!" + c
	}
	return c
}

// absolute describes an absolute path; when it points into the repository the
// message shows the relative spelling.
func (d *decoder) absolute(orig, p string) string {
	root := strings.TrimSuffix(filepath.ToSlash(d.dir), "/") + "/"
	if d.dir != "" && strings.HasPrefix(p, root) && len(p) > len(root) {
		rel := p[len(root):]
		if strings.HasPrefix(orig, "!") {
			rel = "!" + rel
		}
		return fmt.Sprintf("%q is an absolute path (expected it relative to the repository root: %q)", orig, rel)
	}
	return fmt.Sprintf("%q is an absolute path (expected a path relative to the repository root, e.g. agent/agent.py)", orig)
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}

// isAbs reports a Unix absolute path or a Windows drive path.
func isAbs(s string) bool {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "/") {
		return true
	}
	return len(s) >= 3 && s[1] == ':' && (s[2] == '/' || s[2] == '\\') &&
		(s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z')
}
