package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReferenceNamesEveryKey holds docs/reference/config.md's "Every key" list to the
// decoder's tables: a key added to a table and not to the page, or a key the page names
// that the decoder would refuse, fails here. The map names each table's place in the file.
func TestReferenceNamesEveryKey(t *testing.T) {
	want := map[string][]string{
		"(top level)":          keysOf(rootFields),
		"benchmark":            keysOf(benchmarkFields),
		"benchmark.tasks":      keysOf(tasksFields),
		"benchmark.harbor":     keysOf(harborFields),
		"split":                keysOf(splitFields),
		"suite":                keysOf(suiteFields),
		"gate":                 keysOf(gateFields),
		"gate.trials":          keysOf(trialsFields),
		"loop":                 keysOf(loopFields),
		"loop.prices.<model>":  keysOf(priceFields),
		"loop.sandbox":         keysOf(sandboxFields),
		"loop.sandbox.network": {NetworkHosts},
		"loop.harness":         keysOf(harnessFields),
		"clean_room":           keysOf(cleanRoomFields),
	}
	got := referenceKeys(t, filepath.Join("..", "docs", "reference", "config.md"))
	for section, keys := range want {
		if !slices.Equal(got[section], keys) {
			t.Errorf("config.md, Every key, %s: %q; the decoder accepts %q", section, got[section], keys)
		}
	}
	for section := range got {
		if _, ok := want[section]; !ok {
			t.Errorf("config.md, Every key: section %s is not one the decoder has", section)
		}
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// referenceKeys reads the "Every key" list: one line a section, "- `section`: `key`, ...",
// its keys the backticked words before the first link or parenthesis that follows them.
func referenceKeys(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(b), "\n## Every key\n")
	if !ok {
		t.Fatalf("%s has no Every key section", path)
	}
	list, _, _ = strings.Cut(list, "\n## ")
	got := map[string][]string{}
	for _, line := range strings.Split(list, "\n") {
		head, keys, ok := strings.Cut(strings.TrimPrefix(line, "- "), ": ")
		if !strings.HasPrefix(line, "- ") || !ok {
			continue
		}
		head, _, _ = strings.Cut(head, " (besides")
		keys, _, _ = strings.Cut(keys, " (")
		section := strings.Trim(head, "`")
		for _, m := range backticked.FindAllStringSubmatch(keys, -1) {
			got[section] = append(got[section], m[1])
		}
	}
	if len(got) == 0 {
		t.Fatalf("%s: no section listed under Every key", path)
	}
	return got
}
