//go:build !linux

package loop

// folderAttr: folders stay writable mounts only in Linux namespaces.
type folderAttr struct{}

func snapshotFolders([]string) ([]folderAttr, error) { return nil, nil }

func (jl *jail) restoreFolders() ([]string, error) { return nil, nil }
