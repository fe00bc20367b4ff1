package gitguard

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/hgate/hgate/gitguard/internal/index"
	"github.com/hgate/hgate/gitguard/internal/walk"
)

// IndexPreload is the repository's own index, read ahead of the one check of a short
// process (see Repo.PreloadIndex).
type IndexPreload struct {
	path string
	done chan struct{}
	read indexRead
	once sync.Once // the read is taken by one check only
}

// indexRead is an index as readIndex reads it: parsed, with the time its entries are
// racily clean against.
type indexRead struct {
	idx            *index.File
	mtimeS, mtimeN int64
	err            error
}

// PreloadIndex starts reading the repository's own index, through a mapping kept for
// the process's life (Options.MapIndex), while the caller does something else (loads
// its configuration): the read is the largest serial part of `hgate guard` before its
// walk can start. The check given it in Options.Preload takes that read instead of
// reading again; the index is then read earlier than the check starts, which changes
// nothing for a command that only reports (the gate's Step 0 reads its own).
func (r *Repo) PreloadIndex() *IndexPreload {
	p := &IndexPreload{path: filepath.Join(r.gitDir, "index"), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.read = readIndexFile(p.path, r.gitDir, true)
	}()
	return p
}

// take waits for the read of path and returns it; ok is false when the preload is of
// another index, or a check already took it.
func (p *IndexPreload) take(path string) (read indexRead, ok bool) {
	if p == nil || path != p.path {
		return indexRead{}, false
	}
	p.once.Do(func() {
		<-p.done
		read, ok = p.read, true
	})
	return read, ok
}

// readIndexFile reads and parses the index at path (mapped: through a mapping kept for
// the process's life), with the time its entries are racily clean against.
func readIndexFile(path, gitDir string, mapped bool) indexRead {
	st, err := walk.Lstat(path)
	if err != nil {
		return indexRead{err: fmt.Errorf("read index %s: %w", path, err)}
	}
	out := indexRead{mtimeS: st.MtimeS, mtimeN: st.MtimeN}
	read := index.Read
	if mapped {
		read = index.ReadMapped
	}
	if out.idx, err = read(path, gitDir); err != nil {
		return indexRead{err: fmt.Errorf("read index %s: %w", path, err)}
	}
	// Entries of a shared index are racily clean against its own mtime.
	if s := out.idx; s.Shared != "" && (s.SharedMtimeS < out.mtimeS || s.SharedMtimeS == out.mtimeS && s.SharedMtimeN < out.mtimeN) {
		out.mtimeS, out.mtimeN = s.SharedMtimeS, s.SharedMtimeN
	}
	return out
}
