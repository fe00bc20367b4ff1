package gateway

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// standardTiers are, for each top-level request field that chooses how the provider
// serves (and bills) an answer, the values its table's prices are for. Any other value
// asks for a dearer tier than the gateway counts: Anthropic's fast mode (speed "fast",
// 2 to 12 times the price), OpenAI's priority processing (service_tier "priority",
// twice), a tier the table does not know.
var standardTiers = map[string][]string{
	"speed":        {"standard"},
	"service_tier": {"auto", "default", "flex", "standard_only"},
}

// premium is the first field of body that asks for a tier outside standardTiers, as
// "field value", "" when none does. Every top-level key is looked at, any case and every
// duplicate (encoding/json takes the last, in any case; the provider may read another);
// null is the default tier. A body that is not a JSON object asks for nothing: the
// provider refuses it.
func premium(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		t, err := dec.Token()
		var v json.RawMessage
		if err != nil || dec.Decode(&v) != nil {
			return ""
		}
		key, _ := t.(string)
		for field, ok := range standardTiers {
			var s string
			if !strings.EqualFold(field, key) || string(v) == "null" {
				continue
			}
			if json.Unmarshal(v, &s) != nil || !slices.Contains(ok, s) {
				return field + " " + clipValue(v)
			}
		}
	}
	return ""
}

// clipValue is a JSON value as a refusal shows it: at most 40 bytes.
func clipValue(v json.RawMessage) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}
