package refs

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// List returns the value of every ref whose stored name starts with prefix,
// keyed by stored name (Stored does not apply: a caller that maps names maps
// them back).
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
