package proc

import "sync"

// owned are the children this process started to keep (a server it owns for the whole
// run, as the loop's model gateway): ReapOrphans leaves them alone.
var owned sync.Map // pid → struct{}

// Own marks pid, a child of this process's, as one ReapOrphans must not kill; the
// returned func, called once the child has been waited for, ends that.
func Own(pid int) (release func()) {
	owned.Store(pid, struct{}{})
	return func() { owned.Delete(pid) }
}

func isOwned(pid int) bool {
	_, ok := owned.Load(pid)
	return ok
}
