package config

import "testing"

// TestKeepPassing: gate.keep_passing as written, and prepare's default when it is not: on,
// except for a Harbor benchmark.
func TestKeepPassing(t *testing.T) {
	const run = "allow: [a]\nbenchmark:\n  tasks: {file: t.txt}\n  run: [sh, x]\n"
	const harbor = "allow: [a]\nbenchmark:\n  tasks: {file: t.txt}\n  harbor: {path: tasks, agent: oracle}\n"
	tests := []struct {
		name, yaml string
		set        bool
		want       bool
	}{
		{"run, not written", run, false, true},
		{"run, false", run + "gate: {keep_passing: false}\n", true, false},
		{"harbor, not written", harbor, false, false},
		{"harbor, true", harbor + "gate: {keep_passing: true}\n", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("hgate.yaml", t.TempDir(), []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if (c.Gate.KeepPassing != nil) != tt.set || c.DefaultKeepPassing() != tt.want {
				t.Fatalf("keep_passing %v, default %v; want set %v, %v", c.Gate.KeepPassing, c.DefaultKeepPassing(), tt.set, tt.want)
			}
		})
	}
	if _, err := Parse("hgate.yaml", t.TempDir(), []byte(run+"gate: {keep_passing: maybe}\n")); err == nil {
		t.Error("keep_passing: maybe accepted")
	}
}
