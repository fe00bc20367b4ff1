package agentcli

import "path/filepath"

func init() { Register(Aider{}) }

// Aider is aider sending one message file.
type Aider struct{ Base }

// Name implements CLI.
func (Aider) Name() string { return "aider" }

// Args implements CLI: aider sends the message file and exits; hgate makes the commits,
// not aider. --no-gitignore: aider would otherwise add .aider* to .gitignore (a change
// Step 0 rejects); --no-dirty-commits: it would commit the user's pending edits first.
func (Aider) Args() []string {
	return []string{"aider", "--yes-always", "--no-auto-commits", "--no-dirty-commits", "--no-gitignore", "--message-file", "{prompt_file}"}
}

// Env implements CLI: aider keeps its chat and input history in the repository root by
// default, where the agent may not write (and Step 0 would see them): they go to the
// private TMPDIR instead, and the loop keeps the chat history (TranscriptName) in the
// iteration's folder.
func (Aider) Env(sandboxed bool, tmp string) []string {
	return []string{
		"AIDER_CHAT_HISTORY_FILE=" + filepath.Join(tmp, TranscriptName),
		"AIDER_INPUT_HISTORY_FILE=" + filepath.Join(tmp, "aider.input.history"),
	}
}

// Writable implements CLI.
func (Aider) Writable() []string { return []string{"~/.aider/"} }
