package gitguard

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// RefSnapshot is every ref under a prefix and what it holds: a hash, or "ref: NAME" for a
// symbolic ref. The loop takes one before the agent's phase so that a ref the agent moved
// with git plumbing (the gated commit, the ledger) is noticed and put back.
type RefSnapshot map[string]string

// SnapshotRefs reads every ref whose name starts with prefix (e.g. "refs/hgate/").
func (r *Repo) SnapshotRefs(prefix string) (RefSnapshot, error) {
	all, err := r.rawRefStore().List(r.RefName(prefix))
	if err != nil {
		return nil, err
	}
	snap := RefSnapshot{}
	for stored, v := range all {
		if name, ours := r.refAsNamed(stored); ours && strings.HasPrefix(name, prefix) {
			snap[name] = v
		}
	}
	return snap, nil
}

// Changed lists, sorted, the refs whose value differs between s and now, each with
// what happened to it ("refs/hgate/gated: moved from 1a2b3c4 to 5d6e7f8").
func (s RefSnapshot) Changed(now RefSnapshot) []string {
	var out []string
	for name, was := range s {
		is, ok := now[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: deleted (was %s)", name, shortValue(was)))
		case is != was:
			out = append(out, fmt.Sprintf("%s: moved from %s to %s", name, shortValue(was), shortValue(is)))
		}
	}
	for name, is := range now {
		if _, ok := s[name]; !ok {
			out = append(out, fmt.Sprintf("%s: created (at %s)", name, shortValue(is)))
		}
	}
	sort.Strings(out)
	return out
}

func shortValue(v string) string {
	if len(v) == 40 && !strings.HasPrefix(v, "ref: ") {
		return v[:7]
	}
	return v
}

// RestoreRefs puts every ref under prefix back as snap holds it: refs snap lacks are
// deleted, changed ones are set back (a symbolic ref in place of a hash is replaced),
// each through the one ref update (see package refs).
func (r *Repo) RestoreRefs(prefix string, snap RefSnapshot) error {
	now, err := r.SnapshotRefs(prefix)
	if err != nil {
		return err
	}
	var errs []error
	restore := func(name, was, is string) {
		if err := r.refStore().Update(name, was, is); err != nil {
			errs = append(errs, fmt.Errorf("restore ref %s: %w", name, err))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		if _, ok := snap[name]; !ok {
			restore(name, "", now[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(snap)) {
		if was, is := snap[name], now[name]; was != is {
			restore(name, was, is)
		}
	}
	return errors.Join(errs...)
}
