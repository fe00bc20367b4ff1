package gittest

import (
	"os"
	"sync"
)

// templates are the repositories Template made, by key, in folders that outlive the test
// that made them; RemoveTemplates removes them.
var templates struct {
	sync.Mutex
	dirs map[string]string
}

// Template gives the caller its own copy (Copy) of a repository made once per test
// process: the first call for key initialises it (as New) and runs build on it. A set-up
// that many tests repeat (a few files and a commit: four git processes) then costs one
// cp. The package's TestMain calls RemoveTemplates after its tests.
func Template(t TB, key string, build func(r *Repo)) *Repo {
	t.Helper()
	templates.Lock()
	defer templates.Unlock()
	dir, ok := templates.dirs[key]
	if !ok {
		d, err := os.MkdirTemp("", "gittest-template-")
		if err != nil {
			t.Fatalf("template %s: %v", key, err)
		}
		build(initIn(t, d))
		if templates.dirs == nil {
			templates.dirs = map[string]string{}
		}
		templates.dirs[key], dir = d, d
	}
	return Copy(t, dir)
}

// RemoveTemplates removes the repositories Template made; call it from TestMain after
// m.Run.
func RemoveTemplates() {
	templates.Lock()
	defer templates.Unlock()
	for k, d := range templates.dirs {
		os.RemoveAll(d)
		delete(templates.dirs, k)
	}
}
