package objstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// A loose object is objects/xx/yyyy…: zlib over "type size\0" and the
// content.

func (s Store) loosePath(h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(s.objects, hex[:2], hex[2:])
}

// openLoose opens loose object h and reads its header; found is false when
// there is no such file. The caller closes rc.
func (s Store) openLoose(h plumbing.Hash) (typ plumbing.ObjectType, size int64, rc *looseReader, found bool, err error) {
	f, err := os.Open(s.loosePath(h))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil, false, nil
	}
	if err != nil {
		return 0, 0, nil, false, fmt.Errorf("read object %s: %w", h, err)
	}
	zr, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return 0, 0, nil, true, fmt.Errorf("read object %s: %w", h, err)
	}
	rc = &looseReader{f: f, zr: zr, br: bufio.NewReaderSize(zr, 512)}
	typ, size, err = looseHeader(rc.br)
	if err != nil {
		rc.Close()
		return 0, 0, nil, true, fmt.Errorf("read object %s: %w", h, err)
	}
	return typ, size, rc, true, nil
}

type looseReader struct {
	f  *os.File
	zr io.ReadCloser
	br *bufio.Reader
}

func (l *looseReader) Close() {
	l.zr.Close()
	l.f.Close()
}

// looseHeader reads "type size\0".
func looseHeader(br *bufio.Reader) (plumbing.ObjectType, int64, error) {
	head, err := br.ReadSlice(0)
	if err != nil {
		return 0, 0, fmt.Errorf("bad loose object header: %w", err)
	}
	name, num, ok := bytes.Cut(head[:len(head)-1], []byte(" "))
	typ, terr := plumbing.ParseObjectType(string(name))
	size, serr := strconv.ParseInt(string(num), 10, 64)
	if !ok || terr != nil || serr != nil || size < 0 || typ < plumbing.CommitObject || typ > plumbing.TagObject {
		return 0, 0, fmt.Errorf("bad loose object header %q", head)
	}
	return typ, size, nil
}

// readLoose reads loose object h; found is false when it is not loose.
func (s Store) readLoose(h plumbing.Hash) (plumbing.ObjectType, []byte, bool, error) {
	typ, size, rc, found, err := s.openLoose(h)
	if !found || err != nil {
		return 0, nil, found, err
	}
	defer rc.Close()
	data, err := readExactly(rc.br, size)
	if err != nil {
		return 0, nil, true, fmt.Errorf("read object %s: %w", h, err)
	}
	return typ, data, true, nil
}

// looseSize reads only the header of loose object h.
func (s Store) looseSize(h plumbing.Hash) (int64, bool, error) {
	_, size, rc, found, err := s.openLoose(h)
	if !found || err != nil {
		return 0, found, err
	}
	rc.Close()
	return size, true, nil
}

// readExactly reads size bytes and checks the stream ends there. It grows
// its buffer as data arrives, so a header claiming a huge size costs
// nothing until the bytes are there.
func readExactly(r io.Reader, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size <= 1<<20 {
		buf.Grow(int(size))
	}
	n, err := io.Copy(&buf, io.LimitReader(r, size+1))
	if err != nil {
		return nil, err
	}
	if n != size {
		return nil, fmt.Errorf("object content is %d bytes, its header says %d", n, size)
	}
	return buf.Bytes(), nil
}

// writeLoose writes object h as go-git did: compressed into a tmp_obj_* file
// in objects/pack (where gate's clean-up finds what a kill leaves), then
// renamed into objects/xx/ and made read-only. An object already there is
// kept. .git is not writable by a sandboxed process, so names are safe here.
func (s Store) writeLoose(t plumbing.ObjectType, data []byte, h plumbing.Hash) error {
	dst := s.loosePath(h)
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	tmpDir := filepath.Join(s.objects, "pack")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(tmpDir, "tmp_obj_")
	if err != nil {
		return err
	}
	zw := zlib.NewWriter(f)
	_, err = fmt.Fprintf(zw, "%s %d\x00", t, len(data))
	if err == nil {
		_, err = zw.Write(data)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.MkdirAll(filepath.Dir(dst), 0o755)
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	os.Chmod(dst, 0o444)
	return nil
}
