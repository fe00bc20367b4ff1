package agentcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Home is what a CLI keeps in its own home folder and how the loop gives a sandboxed
// run of it a private one instead: the variable that moves the home, and the user's
// files hgate carries in. The loop reads the user's files, never writes them, but for
// the login (see the loop's clihome.go).
type Home struct {
	// Var moves the whole home (CLAUDE_CONFIG_DIR, CODEX_HOME); "" = no home.
	Var string
	// From is the user's home of the CLI, absolute (Var's value when the user set it).
	From string
	// Login is the login file's name, in From and in the private home ("" = none).
	Login string
	// Copy are the user's settings the CLI needs to reach its model as the user set it
	// up, copied in; Start is what one starts as when the user has none.
	Copy []HomeFile
	// Link are the user's own instructions, skills, agents and commands, linked in: the
	// sandbox lets the agent write the private home, not what a link in it names.
	Link []HomeFile
	// Dirs are folders made in the private home.
	Dirs []string
}

// HomeFile is one entry of a private home: its name there, the user's path it comes
// from, and (for a copy) what it starts as when the user has none ("" = left out).
type HomeFile struct {
	Name, From, Start string
}

var errNoLogin = errors.New("the CLI has no login file hgate carries")

// decodeStrict decodes data into v as one JSON value, refusing unknown keys, values of
// other types and anything after it; it returns v encoded again, so that what is
// written is what was checked (a key in another case, which encoding/json matches,
// comes out under its own name).
func decodeStrict(data []byte, v any) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more after the JSON object")
	}
	out, err := json.MarshalIndent(v, "", "  ")
	return append(out, '\n'), err
}

// userDir is the user's folder for a CLI: $env when set (made absolute), else ~/name.
func userDir(env, name string) (string, error) {
	if d := os.Getenv(env); d != "" {
		return filepath.Abs(d)
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, name), nil
}
