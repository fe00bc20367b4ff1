package proc

import "fmt"

// Pin is a program hgate runs outside every sandbox (git, its own companions), as it
// was when found: the file's device, inode, size and change time. A program changed in
// place, through whatever other name reaches its file (a hard link, a bind mount of its
// folder, a link's target), or replaced at its path, no longer matches: the change time
// moves with every write, chmod or new link, and no process can set it back.
type Pin struct {
	path string
	id   string
}

// PinProgram takes path's identity now.
func PinProgram(path string) (Pin, error) {
	id, err := Identity(path)
	if err != nil {
		return Pin{}, err
	}
	return Pin{path: path, id: id}, nil
}

// Identity is what a Pin compares of path's file (links followed) as one printable
// string: the same string for the same unchanged file.
func Identity(path string) (string, error) {
	id, err := identify(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%+v", id), nil
}

// Path is the program's path.
func (p Pin) Path() string { return p.path }

// ID is the program's identity when pinned (Identity).
func (p Pin) ID() string { return p.id }

// Check returns an error naming the program when its file is no longer the one pinned.
func (p Pin) Check() error {
	if id, err := Identity(p.path); err == nil && id == p.id {
		return nil
	}
	return fmt.Errorf("%s, a program hgate runs as you outside every sandbox, changed while hgate ran: hgate stopped instead of running it. "+
		"If you did not change it (an upgrade), another name of its file is one a sandboxed process may write (a hard link, a bind mount of its folder): "+
		"take that off loop.sandbox.writable, check the program, and run again", p.path)
}
