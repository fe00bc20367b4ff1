package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestJSONLKillLeftovers: a line an append killed mid-write left without its newline is
// no record (skipped when read), and the next append cuts it off rather than running on
// from it.
func TestJSONLKillLeftovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "final", "shown.jsonl")
	if err := appendJSONL(path, showing{ID: "a", By: "hgate status"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"b","by":"hgate rep`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ids := func() []string {
		t.Helper()
		var out []string
		if err := readJSONL(path, func(line []byte) error {
			var s showing
			err := json.Unmarshal(line, &s)
			out = append(out, s.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := ids(); len(got) != 1 || got[0] != "a" {
		t.Errorf("with a cut line: %q, want [a]", got)
	}
	if err := appendJSONL(path, showing{ID: "c", By: "hgate final"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(); len(got) != 2 || got[0] != "a" || got[1] != "c" {
		t.Errorf("after the next append: %q, want [a c]", got)
	}
}

// TestLookTag: the ledger's tag is read back only whole, at the end of the message.
func TestLookTag(t *testing.T) {
	fs := &FinalScore{ID: "0123456789abcdef", Tree: "2c41d06aa", Scored: 2}
	for _, m := range []string{scoredMessage(fs, "8ee60162d058", ""), scoredMessage(fs, "8ee60162d058", " (recorded after an interruption)")} {
		g := lookTag.Get().FindStringSubmatch(m)
		if g == nil || g[1] != "8ee60162d058" || g[2] != "scored" || g[3] != fs.ID {
			t.Errorf("%q: %q", m, g)
		}
	}
	if g := lookTag.Get().FindStringSubmatch(shownMessage(showing{ID: "fedcba9876543210", By: "hgate status"}, "8ee60162d058") + " later"); g != nil {
		t.Errorf("a tag not at the end was read: %q", g)
	}
}
