package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
)

// Kinds of Change.
const (
	KindModified   = "modified"
	KindDeleted    = "deleted"
	KindAdded      = "added"
	KindSymlink    = "symlink"            // a symlink where a state file (or the receipts folder) should be
	KindNotRegular = "not a regular file" // a directory, fifo... where a state file should be
	KindNoLedger   = "no ledger"          // a state file exists but the ledger ref does not
)

// Change is one state file that differs from the ledger tip.
type Change struct {
	File   string // slash path relative to the workspace; "receipts" for the folder itself
	Kind   string // one of the Kind constants
	Detail string // what changed inside the file, e.g. "tasks: 12 → 0 entries"; may be empty

	inLedger bool // the tip holds File
}

// Drift is the error Verify returns when the workspace's state files differ
// from the ledger in a way hgate did not make.
type Drift struct {
	Ref       string   // the ledger ref
	NoLedger  bool     // the ref does not exist but state files do
	Changes   []Change // sorted by File
	Workspace string   // how messages name the workspace folder, e.g. "workspace/"
	// Gone is set when the workspace holds none of the state files the ledger has (the
	// workspace was removed): the error then also says how to start over.
	Gone bool
}

// maxLines bounds the files Error lists (200 forged receipts need not be
// 200 lines); Changes holds them all.
const maxLines = 20

// Error lists one line per file, then the ways out.
func (d *Drift) Error() string {
	var b strings.Builder
	if d.NoLedger {
		fmt.Fprintf(&b, "the ledger %s is missing but the workspace holds state files (the ref was deleted, or the files were written without a ledger):", d.Ref)
	} else {
		fmt.Fprintf(&b, "workspace state differs from the ledger %s:", d.Ref)
	}
	for i, c := range d.Changes {
		if i == maxLines && len(d.Changes) > maxLines+1 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(d.Changes)-i)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(d.Workspace + c.File)
		b.WriteString(": ")
		b.WriteString(c.phrase())
	}
	if d.NoLedger {
		b.WriteString("\nrun `hgate state accept` to adopt the files as they are")
	} else {
		b.WriteString("\nrun `hgate state restore` to rewrite them from the ledger, or `hgate state accept` to keep them (recorded in the ledger as a manual edit)")
		if d.Gone {
			b.WriteString("\nto start over on purpose instead, run `hgate prepare --reset` (a new baseline and split; the old state stays in `hgate state log`)")
		}
	}
	return b.String()
}

// Files returns the names of the drifted files, relative to the workspace.
func (d *Drift) Files() []string {
	out := make([]string, len(d.Changes))
	for i, c := range d.Changes {
		out[i] = c.File
	}
	return out
}

func (c Change) phrase() string {
	var s string
	switch c.Kind {
	case KindModified:
		s = "modified outside hgate"
	case KindDeleted:
		s = "deleted outside hgate"
	case KindAdded:
		s = "added outside hgate (the ledger does not hold it)"
	case KindSymlink:
		if c.inLedger || c.File == receiptsDir {
			s = "replaced by a symlink (a state file must be a regular file)"
		} else {
			s = "added as a symlink (a state file must be a regular file)"
		}
	case KindNotRegular:
		s = "replaced by something that is not a regular file"
		if c.File == receiptsDir {
			s = "is not a folder"
		}
	case KindNoLedger:
		s = "not in any ledger"
	default:
		s = c.Kind
	}
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// missingDrift reports state files found without a ledger.
func (l *Ledger) missingDrift(d *disk) *Drift {
	dr := &Drift{Ref: l.repo.RefName(gitguard.LedgerRef), NoLedger: true, Workspace: l.prefix}
	if d.receiptsKind != kindNone {
		dr.Changes = append(dr.Changes, Change{File: receiptsDir, Kind: KindNoLedger})
	}
	for _, name := range d.names() {
		c := Change{File: name, Kind: KindNoLedger}
		switch d.files[name].kind {
		case kindSymlink:
			c.Kind = KindSymlink
		case kindOther:
			c.Kind = KindNotRegular
		}
		dr.Changes = append(dr.Changes, c)
	}
	return dr
}

// drift builds the error for changes Verify could not explain, describing
// what changed inside modified files.
func (l *Ledger) drift(tip plumbing.Hash, d *disk, cs []Change) *Drift {
	dr := &Drift{Ref: l.repo.RefName(gitguard.LedgerRef), Workspace: l.prefix}
	folderGone := d.receiptsKind != kindNone
	for _, c := range cs {
		// Behind a receipts folder that is a symlink every receipt reads as
		// deleted: the folder's own line says it all.
		if folderGone && c.Kind == KindDeleted && strings.HasPrefix(c.File, receiptsDir+"/") {
			continue
		}
		if c.Kind == KindModified {
			if old, err := l.repo.FileAt(tip, c.File); err == nil {
				c.Detail = describe(c.File, old, d.files[c.File].data)
			}
		}
		dr.Changes = append(dr.Changes, c)
	}
	return dr
}

// describe says briefly what changed between two versions of a state file.
// It is best effort: an empty string when it cannot tell.
func describe(name string, old, new []byte) string {
	switch {
	case strings.HasSuffix(name, ".json"):
		return describeJSON(old, new)
	case strings.HasSuffix(name, ".tsv"):
		return describeLines(old, new)
	}
	return ""
}

// maxDetails bounds the parts of a description.
const maxDetails = 3

func describeJSON(old, new []byte) string {
	var o, n any
	if decodeJSON(old, &o) != nil {
		return ""
	}
	if decodeJSON(new, &n) != nil {
		return "no longer valid JSON"
	}
	om, ok1 := o.(map[string]any)
	nm, ok2 := n.(map[string]any)
	if !ok1 || !ok2 {
		return ""
	}
	keys := map[string]bool{}
	for k := range om {
		keys[k] = true
	}
	for k := range nm {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var parts []string
	for _, k := range sorted {
		ov, inOld := om[k]
		nv, inNew := nm[k]
		var p string
		switch {
		case !inNew:
			p = k + " removed"
		case !inOld:
			p = k + " added"
		default:
			p = describeValue(k, ov, nv)
		}
		if p != "" {
			parts = append(parts, p)
		}
	}
	return joinParts(parts)
}

func describeValue(key string, o, n any) string {
	switch ov := o.(type) {
	case []any:
		nv, ok := n.([]any)
		if !ok {
			return key + ": changed type"
		}
		if len(ov) != len(nv) {
			return fmt.Sprintf("%s: %d → %d entries", key, len(ov), len(nv))
		}
		diff := 0
		for i := range ov {
			if !sameJSON(ov[i], nv[i]) {
				diff++
			}
		}
		if diff > 0 {
			return fmt.Sprintf("%s: %d of %d entries changed", key, diff, len(ov))
		}
		return ""
	case map[string]any:
		nv, ok := n.(map[string]any)
		if !ok {
			return key + ": changed type"
		}
		if len(ov) != len(nv) {
			return fmt.Sprintf("%s: %d → %d entries", key, len(ov), len(nv))
		}
		diff := 0
		for k, v := range ov {
			if w, ok := nv[k]; !ok || !sameJSON(v, w) {
				diff++
			}
		}
		if diff > 0 {
			return fmt.Sprintf("%s: %d of %d entries changed", key, diff, len(ov))
		}
		return ""
	}
	if sameJSON(o, n) {
		return ""
	}
	return fmt.Sprintf("%s: %s → %s", key, short(o), short(n))
}

func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// short renders a scalar JSON value compactly, clipped for a message.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	s := string(b)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// describeLines compares text files by line; results.tsv has one header line.
func describeLines(old, new []byte) string {
	ol := lines(old)
	nl := lines(new)
	first := 0
	for first < len(ol) && first < len(nl) && ol[first] == nl[first] {
		first++
	}
	var parts []string
	if len(ol) != len(nl) {
		parts = append(parts, fmt.Sprintf("rows: %d → %d", max(len(ol)-1, 0), max(len(nl)-1, 0)))
	}
	switch {
	case first == len(ol) && len(nl) > len(ol):
		parts = append(parts, fmt.Sprintf("appended at line %d", first+1))
	case first < len(ol) || first < len(nl):
		parts = append(parts, fmt.Sprintf("first difference at line %d", first+1))
	}
	return joinParts(parts)
}

func lines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func joinParts(parts []string) string {
	if len(parts) > maxDetails {
		return strings.Join(parts[:maxDetails], "; ") + fmt.Sprintf("; %d more", len(parts)-maxDetails)
	}
	return strings.Join(parts, "; ")
}
