package gitguard

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard/internal/refs"
)

// RefSnapshot is every ref under a prefix and what it holds: a hash, or "ref: NAME" for a
// symbolic ref. The loop takes one before the agent's phase so that a ref the agent moved
// with git plumbing (the gated commit, the ledger) is noticed and put back.
type RefSnapshot map[string]string

// SnapshotRefs reads every ref whose name starts with prefix (e.g. "refs/hgate/").
func (r *Repo) SnapshotRefs(prefix string) (RefSnapshot, error) {
	iter, err := r.repo.Storer.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	snap := RefSnapshot{}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().String()
		if !strings.HasPrefix(name, prefix) || strings.HasSuffix(name, ".lock") {
			return nil // go-git lists a writer's NAME.lock too; git never takes it for a ref
		}
		if v := refs.ValueOf(ref); v != "" {
			snap[name] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
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
// deleted, changed ones are set back (a symbolic ref in place of a hash is replaced).
// Each goes through updateRef, so a crash leaves every ref old or restored, never
// missing or empty.
func (r *Repo) RestoreRefs(prefix string, snap RefSnapshot) error {
	now, err := r.SnapshotRefs(prefix)
	if err != nil {
		return err
	}
	store := r.refStore()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(now)) {
		if _, ok := snap[name]; !ok {
			errs = append(errs, restoreRef(store, name, "", now[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(snap)) {
		if was, is := snap[name], now[name]; was != is {
			errs = append(errs, restoreRef(store, name, was, is))
		}
	}
	return errors.Join(errs...)
}

func restoreRef(store *refs.Store, name, was, is string) error {
	if err := store.Update(name, was, is); err != nil {
		return fmt.Errorf("restore ref %s: %w", name, err)
	}
	return nil
}
