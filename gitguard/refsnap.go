package gitguard

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
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
		name, ours := r.refAsNamed(ref.Name().String())
		if !ours || !strings.HasPrefix(name, prefix) {
			return nil
		}
		if ref.Type() == plumbing.SymbolicReference {
			snap[name] = "ref: " + ref.Target().String()
		} else {
			snap[name] = ref.Hash().String()
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
func (r *Repo) RestoreRefs(prefix string, snap RefSnapshot) error {
	now, err := r.SnapshotRefs(prefix)
	if err != nil {
		return err
	}
	var errs []error
	for name, is := range now {
		was, ok := snap[name]
		if ok && !strings.HasPrefix(is, "ref: ") {
			continue // overwritten in place below, never left missing by a crash in between
		}
		if ok && was == is {
			continue
		}
		// Created by the agent, or symbolic: a symbolic ref cannot be overwritten with a hash.
		if err := r.repo.Storer.RemoveReference(plumbing.ReferenceName(r.RefName(name))); err != nil {
			errs = append(errs, fmt.Errorf("restore ref %s: %w", name, err))
		}
	}
	for name, was := range snap {
		if now[name] == was {
			continue
		}
		var ref *plumbing.Reference
		stored := plumbing.ReferenceName(r.RefName(name))
		if target, ok := strings.CutPrefix(was, "ref: "); ok {
			ref = plumbing.NewSymbolicReference(stored, plumbing.ReferenceName(target))
		} else {
			ref = plumbing.NewHashReference(stored, plumbing.NewHash(was))
		}
		if err := r.repo.Storer.SetReference(ref); err != nil {
			errs = append(errs, fmt.Errorf("restore ref %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
