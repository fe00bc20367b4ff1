package gitguard

// SetRestoreWritten installs a hook that runs after the restore wrote a file.
func SetRestoreWritten(f func(p string)) { restoreWritten = f }
