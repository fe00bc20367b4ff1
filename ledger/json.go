package ledger

import "github.com/hgate/hgate/gitguard"

// LogJSON is hgate state log --json: the ledger's entries, newest first. Fields are
// declared in the order they print; they may be added, never renamed.
type LogJSON struct {
	Entries []LogEntryJSON `json:"entries"`
}

// LogEntryJSON is one ledger commit in LogJSON.
type LogEntryJSON struct {
	Changed []string `json:"changed"` // the state files it changed, relative to the workspace
	Commit  string   `json:"commit"`
	Message string   `json:"message"`
	Time    string   `json:"time"` // UTC, RFC 3339 to the second
}

// LogJSONOf is entries (Ledger.Log) as hgate state log --json prints them.
func LogJSONOf(entries []gitguard.RefEntry) LogJSON {
	out := LogJSON{Entries: make([]LogEntryJSON, len(entries))}
	for i, e := range entries {
		changed := e.Changed
		if changed == nil {
			changed = []string{}
		}
		out.Entries[i] = LogEntryJSON{Changed: changed, Commit: e.Hash.String(), Message: e.Message, Time: e.When.UTC().Format("2006-01-02T15:04:05Z")}
	}
	return out
}
