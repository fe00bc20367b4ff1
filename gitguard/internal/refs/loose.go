package refs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard/internal/lockfile"
)

// readLoose reads a loose ref file. found is false when there is none to
// read (absent, a folder, or empty, as a kill can leave a file git's own
// writers were filling): the caller then reads packed-refs, as go-git did.
func readLoose(path string) (v string, found bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var perr *fs.PathError
		if errors.Is(err, fs.ErrNotExist) || errors.As(err, &perr) && isDirErr(path) {
			return "", false, nil
		}
		return "", false, err
	}
	if len(b) == 0 {
		return "", false, nil
	}
	return parseValue(strings.TrimSpace(string(b))), true, nil
}

func isDirErr(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// parseValue is a ref file's line as a value: "ref: NAME", a hash, or ""
// for anything else (no ref git would resolve).
func parseValue(line string) string {
	if target, ok := strings.CutPrefix(line, "ref: "); ok {
		return "ref: " + strings.TrimSpace(target)
	}
	if plumbing.IsHash(line) {
		return HashValue(plumbing.NewHash(line))
	}
	return ""
}

// packed reads packed-refs: "HASH NAME" lines, with "# pack-refs" headers
// and "^PEELED" lines after an annotated tag. A missing file is no refs.
func (s *Store) packed() (map[string]string, error) {
	out := map[string]string{}
	data, err := os.ReadFile(filepath.Join(s.CommonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		h, name, ok := strings.Cut(line, " ")
		if !ok || !plumbing.IsHash(h) || name == "" {
			return nil, fmt.Errorf("read packed-refs: malformed line %q", line)
		}
		out[name] = HashValue(plumbing.NewHash(h))
	}
	return out, sc.Err()
}

// unpack removes ref name's line (and its "^" line) from packed-refs, the way
// git rewrites the file: read and rewritten under packed-refs.lock, renamed
// into place.
func (s *Store) unpack(name string) error {
	path := filepath.Join(s.CommonDir, "packed-refs")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !strings.Contains(string(data), " "+name+"\n") {
		return nil
	}
	if err != nil {
		return err
	}
	lock, err := lockfile.Create(path, staleLock)
	if err != nil {
		return err
	}
	defer lock.Abort()
	if data, err = os.ReadFile(path); err != nil {
		return err
	}
	return lock.Commit(withoutRef(data, name))
}

// withoutRef is packed-refs without name's line and the "^" line after it.
func withoutRef(data []byte, name string) []byte {
	var kept bytes.Buffer
	drop := false
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if strings.HasPrefix(l, "^") && drop {
			continue
		}
		_, n, _ := strings.Cut(strings.TrimRight(l, "\n"), " ")
		drop = !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "^") && n == name
		if !drop {
			kept.WriteString(l)
		}
	}
	return kept.Bytes()
}
