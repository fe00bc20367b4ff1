package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/gitguard/internal/gitconfig"
)

// HooksDir returns the absolute directory git runs this worktree's hooks
// from: core.hooksPath when set (a relative value is taken from the worktree
// root, where git runs hooks; "~/" is the home directory), else the hooks
// folder of the common git directory, which linked worktrees share.
//
// core.hooksPath is looked up the way git does for the files it reads
// without includes: the system file (/etc/gitconfig, unless
// GIT_CONFIG_NOSYSTEM is set), the global file (GIT_CONFIG_GLOBAL, else
// $XDG_CONFIG_HOME/git/config and ~/.gitconfig), then the repository's
// config; the last value wins. include/includeIf and config.worktree are not
// followed.
func (r *Repo) HooksDir() (string, error) {
	value, err := r.hooksPathSetting()
	if err != nil {
		return "", err
	}
	if value == "" {
		return filepath.Join(r.commonDir, "hooks"), nil
	}
	if rest, ok := strings.CutPrefix(value, "~/"); ok || value == "~" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("core.hooksPath %s: %w", value, err)
		}
		value = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(value) {
		value = filepath.Join(r.root, value)
	}
	return filepath.Clean(value), nil
}

// hooksPathSetting returns the effective core.hooksPath, "" when unset.
func (r *Repo) hooksPathSetting() (string, error) {
	var files []string
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		files = append(files, "/etc/gitconfig")
	}
	if g, ok := os.LookupEnv("GIT_CONFIG_GLOBAL"); ok {
		files = append(files, g)
	} else {
		xdg := os.Getenv("XDG_CONFIG_HOME")
		home, _ := os.UserHomeDir()
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	value := ""
	for _, f := range files {
		v, ok, err := hooksPathIn(f)
		if err != nil {
			return "", err
		}
		if ok {
			value = v
		}
	}
	local, err := r.localConfig()
	if err != nil {
		return "", fmt.Errorf("read repository config: %w", err)
	}
	if v, ok := local.Get("core.hooksPath"); ok {
		value = v
	}
	return value, nil
}

// hooksPathIn reads core.hooksPath from one config file; a missing file is
// not an error.
func hooksPathIn(file string) (string, bool, error) {
	if file == os.DevNull {
		return "", false, nil
	}
	cfg, err := gitconfig.ReadFile(file) // a missing file reads as empty
	if err != nil {
		return "", false, err
	}
	v, ok := cfg.Get("core.hooksPath")
	return v, ok, nil
}

// GitDir returns the absolute git directory of this worktree: the one holding
// its index and HEAD (".git", or ".git/worktrees/NAME" in a linked worktree).
func (r *Repo) GitDir() string { return r.gitDir }
