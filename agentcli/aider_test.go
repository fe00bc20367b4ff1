package agentcli

import (
	"slices"
	"strings"
	"testing"
)

// TestAider: aider reads the prompt file, keeps its histories in the private TMPDIR (its
// chat history under TranscriptName), and cannot be resumed by hgate.
func TestAider(t *testing.T) {
	c := For([]string{"aider"})
	args := Command(c, "/it/prompt.txt")
	if !slices.Equal(args[len(args)-2:], []string{"--message-file", "/it/prompt.txt"}) {
		t.Errorf("aider's command line: %q", args)
	}
	env := c.Env(true, "/tmp/a")
	if !slices.Contains(env, "AIDER_CHAT_HISTORY_FILE=/tmp/a/"+TranscriptName) || !slices.ContainsFunc(env, func(e string) bool {
		return strings.HasPrefix(e, "AIDER_INPUT_HISTORY_FILE=/tmp/a/")
	}) {
		t.Errorf("aider's env: %q", env)
	}
	if _, ok := Resume(c, args, "S1"); ok {
		t.Errorf("aider resumed")
	}
	if w := c.Writable(); !slices.Equal(w, []string{"~/.aider/"}) {
		t.Errorf("aider's home: %q", w)
	}
}
