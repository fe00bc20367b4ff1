package proc

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPin: a program changed after it was pinned, by whatever name reached its file,
// fails the check; one left alone passes it.
func TestPin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, prog, other string)
	}{
		{"untouched", func(*testing.T, string, string) {}},
		{"written through a hard link, its times put back", func(t *testing.T, prog, other string) {
			fi, _ := os.Stat(prog)
			if err := os.WriteFile(other, []byte("#!/bin/sh\necho evil\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(other, fi.ModTime(), fi.ModTime())
		}},
		{"same size through a hard link", func(t *testing.T, prog, other string) {
			f, err := os.OpenFile(other, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("X"), 0)
			f.Close()
		}},
		{"replaced by a rename", func(t *testing.T, prog, other string) {
			next := prog + ".new"
			os.WriteFile(next, []byte("#!/bin/sh\necho hi\n"), 0o755)
			if err := os.Rename(next, prog); err != nil {
				t.Fatal(err)
			}
		}},
		{"chmod", func(t *testing.T, prog, other string) { os.Chmod(other, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			prog, other := filepath.Join(dir, "git"), filepath.Join(dir, "sdk-git")
			if err := os.WriteFile(prog, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(prog, other); err != nil {
				t.Skip("no hard links here:", err)
			}
			p, err := PinProgram(prog)
			if err != nil {
				t.Fatal(err)
			}
			nextTick(t, dir, prog)
			tc.change(t, prog, other)
			err = p.Check()
			if tc.name == "untouched" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("the change was not seen")
			}
		})
	}
	if _, err := PinProgram(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing program was pinned")
	}
}

// nextTick waits until the filesystem's clock has moved past prog's change time: a
// kernel with coarse timestamps gives two changes within one tick the same one, which
// no agent's change minutes after a run started shares.
func nextTick(t *testing.T, dir, prog string) {
	t.Helper()
	fi, err := os.Stat(prog)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe")
	for i := 0; ; i++ {
		os.WriteFile(probe, []byte{byte(i)}, 0o644)
		if pi, err := os.Stat(probe); err == nil && pi.ModTime().After(fi.ModTime()) {
			return
		}
		if i > 1e6 {
			t.Fatal("the filesystem's clock does not move")
		}
	}
}
