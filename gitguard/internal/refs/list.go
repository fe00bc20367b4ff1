package refs

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// List returns the value of every ref whose name starts with prefix, keyed
// by name.
func (s *Store) List(prefix string) (map[string]string, error) {
	iter, err := s.Refs.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	out := map[string]string{}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().String()
		if !strings.HasPrefix(name, prefix) || strings.HasSuffix(name, ".lock") {
			return nil // go-git lists a writer's NAME.lock too; git never takes it for a ref
		}
		if v := ValueOf(ref); v != "" {
			out[name] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	return out, nil
}

// Restore puts every ref under prefix back to the value want holds for it:
// refs want lacks are deleted, the others set (a symbolic value included).
// Each goes through Update, so a crash leaves every ref old or restored,
// never missing or empty, and a ref another writer holds is not touched.
func (s *Store) Restore(prefix string, want map[string]string) error {
	now, err := s.List(prefix)
	if err != nil {
		return err
	}
	var errs []error
	restore := func(name, was, is string) {
		if err := s.Update(name, was, is); err != nil {
			errs = append(errs, fmt.Errorf("restore ref %s: %w", name, err))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		if _, ok := want[name]; !ok {
			restore(name, "", now[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if was, is := want[name], now[name]; was != is {
			restore(name, was, is)
		}
	}
	return errors.Join(errs...)
}
