//go:build fsafetrace

package fsafe

import (
	"os"
	"sync"
)

// In the fsafetrace build every access is appended, one line "op<TAB>root<TAB>name", to
// the file $HGATE_FSAFE_TRACE: the list of every (root, name) hgate touched in folders a
// sandbox can write, which the planting test plants at.
var recordMu sync.Mutex

func record(op, root, name string) {
	p := os.Getenv("HGATE_FSAFE_TRACE")
	if p == "" {
		return
	}
	recordMu.Lock()
	defer recordMu.Unlock()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	f.WriteString(op + "\t" + root + "\t" + name + "\n")
	f.Close()
}
