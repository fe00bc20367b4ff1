package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Measured is the part of hgate.yaml a baseline is only comparable under: how tasks are
// listed, run and timed out (benchmark, but not concurrency, which changes no reward), what
// the clean room gives them (clean_room) and how the split was drawn (split). prepare records
// it next to the baseline; a later run under another one would compare scores taken under
// different rules. Keys and values are spelled as in hgate.yaml.
type Measured struct {
	Benchmark MeasuredBenchmark `json:"benchmark"`
	CleanRoom MeasuredCleanRoom `json:"clean_room"`
	Split     MeasuredSplit     `json:"split"`
}

// MeasuredBenchmark is benchmark without concurrency.
type MeasuredBenchmark struct {
	Tasks         MeasuredTasks     `json:"tasks"`
	Run           []string          `json:"run,omitempty"`
	Batch         []string          `json:"batch,omitempty"`
	TaskTimeout   string            `json:"task_timeout"`
	TimeoutPolicy string            `json:"timeout_policy"`
	Env           map[string]string `json:"env,omitempty"`
}

// MeasuredTasks is benchmark.tasks.
type MeasuredTasks struct {
	Glob    string   `json:"glob,omitempty"`
	File    string   `json:"file,omitempty"`
	Command []string `json:"command,omitempty"`
}

// MeasuredCleanRoom is clean_room; its lists are sorted, their order changing nothing.
type MeasuredCleanRoom struct {
	Enabled  bool              `json:"enabled"`
	Carry    []string          `json:"carry,omitempty"`
	Env      []string          `json:"env,omitempty"`
	Home     string            `json:"home,omitempty"`
	Writable []string          `json:"writable,omitempty"`
	Caches   map[string]string `json:"caches,omitempty"`
	TestOnly []string          `json:"test_only,omitempty"`
}

// MeasuredSplit is split.
type MeasuredSplit struct {
	TestFraction float64 `json:"test_fraction"`
	Seed         int64   `json:"seed"`
}

// Measured returns the configuration a baseline taken under c is comparable under.
func (c *Config) Measured() Measured {
	b, r := c.Benchmark, c.CleanRoom
	sorted := func(s []string) []string {
		if len(s) == 0 {
			return nil
		}
		return slices.Sorted(slices.Values(s))
	}
	none := func(m map[string]string) map[string]string {
		if len(m) == 0 {
			return nil
		}
		return maps.Clone(m)
	}
	return Measured{
		Benchmark: MeasuredBenchmark{
			Tasks: MeasuredTasks{Glob: b.Tasks.Glob, File: b.Tasks.File, Command: slices.Clone(b.Tasks.Command)},
			Run:   slices.Clone(b.Run), Batch: slices.Clone(b.Batch),
			TaskTimeout: Duration(b.TaskTimeout), TimeoutPolicy: b.TimeoutPolicy, Env: none(b.Env),
		},
		CleanRoom: MeasuredCleanRoom{
			Enabled: r.Enabled, Carry: sorted(r.Carry), Env: sorted(r.Env), Home: r.Home,
			Writable: sorted(r.Writable), Caches: none(r.Caches), TestOnly: sorted(r.TestOnly),
		},
		Split: MeasuredSplit{TestFraction: c.Split.TestFraction, Seed: c.Split.Seed},
	}
}

// Duration spells d as hgate.yaml would: 20m, 1h30m, 10s, not 20m0s.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Diff lists what changed from m to to, one "section.key: old → new" line per key, in the
// order hgate.yaml's sections and keys are written; a key left out shows as (not set).
func (m Measured) Diff(to Measured) []string {
	var out []string
	for _, s := range []struct {
		name     string
		from, to any
	}{
		{"benchmark", m.Benchmark, to.Benchmark},
		{"clean_room", m.CleanRoom, to.CleanRoom},
		{"split", m.Split, to.Split},
	} {
		from, fromKeys := flatten(s.from)
		next, _ := flatten(s.to)
		for _, k := range fromKeys {
			if a, b := from[k], next[k]; a != b {
				out = append(out, fmt.Sprintf("%s.%s: %s → %s", s.name, k, a, b))
			}
		}
	}
	return out
}

// flatten renders each field of a section as compact JSON ("(not set)" when left out),
// with the fields' names in declaration order.
func flatten(section any) (map[string]string, []string) {
	data, _ := json.Marshal(section)
	var fields map[string]json.RawMessage
	json.Unmarshal(data, &fields)
	keys := jsonKeys(section)
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		v, ok := fields[k]
		if !ok {
			out[k] = "(not set)"
			continue
		}
		var text string
		if json.Unmarshal(v, &text) == nil {
			out[k] = text // a plain string reads as in hgate.yaml: 10m, not "10m"
			continue
		}
		var buf bytes.Buffer
		json.Compact(&buf, v)
		out[k] = strings.ReplaceAll(buf.String(), `","`, `", "`)
	}
	return out, keys
}

// jsonKeys are the JSON names of a section's fields, in order.
func jsonKeys(section any) []string {
	t := reflect.TypeOf(section)
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return keys
}
