package gatewayapi

import "testing"

// TestLookupSnapshotsOnly: a model is priced by its own entry or the entry it is a dated
// snapshot of; another model whose name only starts with an entry's (a dearer one:
// gpt-5-pro, gpt-5.5) is a model the table does not know, priced at the dearest entry by
// the gateway, never at the cheaper entry's price.
func TestLookupSnapshotsOnly(t *testing.T) {
	for _, tc := range []struct {
		model string
		entry string // "" = not known
	}{
		{"gpt-5", "gpt-5"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-opus-4-20250514", "claude-opus-4"},
		{"claude-haiku-4-5", "claude-haiku-4-5"},
		{"gpt-5-pro", ""},
		{"gpt-5-pro-2025-10-06", ""},
		{"gpt-5.5", ""},
		{"gpt-5.1-codex-max-xhigh", ""},
		{"claude-opus-4-9", ""},
		{"gpt-5-2025-08-0", ""},
		{"gpt-5-20250807x", ""},
	} {
		got, ok := DefaultPrices.Lookup(tc.model)
		if want, known := DefaultPrices[tc.entry]; ok != (tc.entry != "") || ok && got != want {
			t.Errorf("Lookup(%q) = %+v, %v; want the entry %q (%+v, %v)", tc.model, got, ok, tc.entry, want, known)
		}
	}
}
