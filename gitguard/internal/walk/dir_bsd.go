//go:build darwin || freebsd

package walk

// On macOS and FreeBSD the walk's directory is fdDir: descriptor-relative, as on Linux.
type dirHandle = fdDir

func openDir(path string) (*dirHandle, error) { return openFdDir(path) }

func openDirAt(parent *dirHandle, name string) (*dirHandle, error) { return parent.openSub(name) }
