package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/timescale"
	"github.com/rogpeppe/go-internal/testscript"
)

// The example's timeouts: a `…timeout: DURATION` key of hgate.yaml, and a tool
// manifest's `"…_seconds": N` (mcp.json's startup and self-test waits).
var (
	yamlTimeout = regexp.MustCompile(`(?m)^(\s*[a-z_]*timeout:[ \t]*)([0-9][0-9a-zµ.]*)`)
	jsonSeconds = regexp.MustCompile(`("[a-z_]*_seconds":[ \t]*)([0-9][0-9.]*)`)
)

// scaleTimeouts stretches, by HGATE_TEST_TIMESCALE, the timeouts of a copy of the bundled
// example: DIR/hgate.yaml's task, attempt and build timeouts and the tool manifests'
// (DIR/tools/*/mcp.json) waits, in place. The example's timeouts bound honest work (a task
// answers in milliseconds idle, seconds under load) and the hangs they stop are endless
// (candidate 05's task, 07's agent), so the verdicts are the same at any factor; at the
// default factor 1 the files are left as they are.
func scaleTimeouts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: timescale DIR")
	}
	ts.Check(scaleExample(ts.MkAbs(args[0]), timescale.Factor()))
}

// scaledValue sets the script's variable NAME to VALUE stretched by HGATE_TEST_TIMESCALE:
// `scaled NAME DURATION` gives the duration as hgate writes one (so a script can pass a
// stretched --attempt-timeout and expect its own "stopped after" text), `scaled NAME N` a
// number (seconds for a manifest or a `timeout` guard). At the default factor 1, VALUE as
// hgate would write it.
func scaledValue(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: scaled NAME DURATION|NUMBER")
	}
	v, err := scaleValue(args[1], timescale.Factor())
	ts.Check(err)
	ts.Setenv(args[0], v)
}

// scaleValue is s, a duration or a number, multiplied by f.
func scaleValue(s string, f float64) (string, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return config.Duration(time.Duration(float64(d) * f)), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", fmt.Errorf("scaled: %q is neither a duration nor a number", s)
	}
	return strconv.FormatFloat(v*f, 'f', -1, 64), nil
}

// scaleExample multiplies the timeouts of the example copied at dir by f.
func scaleExample(dir string, f float64) error {
	if f == 1 {
		return nil
	}
	err := rewrite(filepath.Join(dir, "hgate.yaml"), yamlTimeout, func(s string) (string, bool) {
		d, err := time.ParseDuration(s)
		return time.Duration(float64(d) * f).String(), err == nil
	})
	manifests, gerr := filepath.Glob(filepath.Join(dir, "tools", "*", "mcp.json"))
	err = errors.Join(err, gerr)
	for _, m := range manifests {
		err = errors.Join(err, rewrite(m, jsonSeconds, func(s string) (string, bool) {
			v, err := strconv.ParseFloat(s, 64)
			return strconv.FormatFloat(v*f, 'f', -1, 64), err == nil
		}))
	}
	return err
}

// rewrite replaces, in the file at path, the value (re's second group) of each match of
// re by scale's answer; a value scale cannot read is left as it is.
func rewrite(path string, re *regexp.Regexp, scale func(string) (string, bool)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out := re.ReplaceAllFunc(data, func(m []byte) []byte {
		g := re.FindSubmatch(m)
		v, ok := scale(string(g[2]))
		if !ok {
			return m
		}
		return append(append([]byte{}, g[1]...), v...)
	})
	return os.WriteFile(path, out, 0o644)
}

func TestScaleTimeouts(t *testing.T) {
	yaml := "benchmark:\n  task_timeout: 3s\n  timeout_policy: agent\nloop:\n  attempt_timeout: 10s\n  harness:\n    build_timeout: 1m # a comment\n"
	mcp := `{"timeouts": {"startup_seconds": 5, "self_test_seconds": 1.5}}`
	for _, c := range []struct {
		factor    float64
		yaml, mcp string
	}{
		{1, yaml, mcp},
		{8, "benchmark:\n  task_timeout: 24s\n  timeout_policy: agent\nloop:\n  attempt_timeout: 1m20s\n  harness:\n    build_timeout: 8m0s # a comment\n",
			`{"timeouts": {"startup_seconds": 40, "self_test_seconds": 12}}`},
	} {
		dir := t.TempDir()
		ops := filepath.Join(dir, "tools", "ops")
		if err := errors.Join(os.MkdirAll(ops, 0o755),
			os.WriteFile(filepath.Join(dir, "hgate.yaml"), []byte(yaml), 0o644),
			os.WriteFile(filepath.Join(ops, "mcp.json"), []byte(mcp), 0o644),
			scaleExample(dir, c.factor)); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]string{"hgate.yaml": c.yaml, "tools/ops/mcp.json": c.mcp} {
			if got, err := os.ReadFile(filepath.Join(dir, path)); err != nil || string(got) != want {
				t.Errorf("factor %v: %s = %q (%v), want %q", c.factor, path, got, err, want)
			}
		}
	}
}

func TestScaleValue(t *testing.T) {
	for _, c := range []struct {
		in     string
		factor float64
		want   string
	}{
		{"3s", 1, "3s"}, {"3s", 8, "24s"}, {"2m", 1, "2m"}, {"15s", 8, "2m"}, {"10s", 8, "1m20s"},
		{"120", 1, "120"}, {"120", 8, "960"}, {"3000", 2.5, "7500"}, {"0.5", 3, "1.5"},
	} {
		if got, err := scaleValue(c.in, c.factor); err != nil || got != c.want {
			t.Errorf("scaleValue(%q, %v) = %q, %v; want %q", c.in, c.factor, got, err, c.want)
		}
	}
	if _, err := scaleValue("soon", 8); err == nil {
		t.Error(`scaleValue("soon") gave no error`)
	}
}
