package walk

import (
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
)

// HashFile hashes a regular file as a blob.
func HashFile(full string) (plumbing.Hash, error) {
	f, err := os.Open(full)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := plumbing.NewHasher(plumbing.BlobObject, fi.Size())
	n, err := io.Copy(h, f)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if n != fi.Size() {
		return plumbing.ZeroHash, fmt.Errorf("%s changed while it was read", full)
	}
	return h.Sum(), nil
}

// HashLink is the blob id of the symlink at full, and its target.
func HashLink(full string) (plumbing.Hash, string, error) {
	t, err := os.Readlink(full)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	return plumbing.ComputeHash(plumbing.BlobObject, []byte(t)), t, nil
}
