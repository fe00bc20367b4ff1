// Package platform names what hgate cannot do on the system it was built for: the
// features that need Linux (Landlock, /proc, waitid) or Unix (flock, process groups,
// signals) fail with ErrUnsupported elsewhere, rather than the build failing.
package platform

import (
	"errors"
	"runtime"
)

// ErrUnsupported is the error of a feature this system does not offer, e.g.
// "not supported on windows".
var ErrUnsupported = errors.New("not supported on " + runtime.GOOS)
