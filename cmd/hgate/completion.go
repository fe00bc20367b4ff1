package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
)

// completionCmd prints the code that makes a shell ask hgate itself (COMP_LINE set; see
// run) what completes a command line. The code and the completions are built here over
// Kong's model rather than by a library that parses its shell templates at every start
// of hgate, whatever the command.
type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
}

func (c *completionCmd) Help() string {
	return `bash: source <(hgate completion bash), or add that line to ~/.bashrc.
zsh:  source <(hgate completion zsh), or add that line to ~/.zshrc.
fish: hgate completion fish | source, or add that line to ~/.config/fish/config.fish.

The code names the hgate binary by its absolute path; the completions themselves come from that binary, so they always match its commands and flags.`
}

func (c *completionCmd) Run(kctx *kong.Context) error {
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		return fmt.Errorf("completion: the path of the hgate binary: %w", err)
	}
	_, err = fmt.Fprintln(kctx.Stdout, shellInit(c.Shell, bin, kctx.Model.Name))
	return err
}

// shellInit is the code that hands the completion of name's command lines to the binary
// bin in shell (bash's complete -C; zsh through bashcompinit; fish with COMP_LINE set).
func shellInit(shell, bin, name string) string {
	bash := "complete -o default -o bashdefault -C " + bin + " " + name
	switch shell {
	case "zsh":
		return "autoload -U +X bashcompinit && bashcompinit\n" + bash
	case "fish":
		fn := "__complete_" + name
		return "function " + fn + "\n" +
			"    set -lx COMP_LINE (commandline -cp)\n" +
			"    test -z (commandline -ct)\n" +
			"    and set COMP_LINE \"$COMP_LINE \"\n" +
			"    " + bin + "\n" +
			"end\n" +
			"complete -f -c " + name + " -a \"(" + fn + ")\""
	}
	return bash
}

// completeLine answers the shell's question when COMP_LINE is set: it prints what
// completes the line and returns true (the caller exits 0), else it returns false.
func completeLine(parser *kong.Kong) bool {
	c := complete.New(parser.Model.Name, completionModel(parser.Model.Node))
	c.Out = parser.Stdout
	return c.Complete()
}

// completionModel is node as the completer reads it: its visible subcommands, its flags
// (with what may follow each) and its positional arguments.
func completionModel(node *kong.Node) complete.Command {
	cmd := complete.Command{Sub: complete.Commands{}, GlobalFlags: complete.Flags{}}
	for _, child := range node.Children {
		if child != nil && !child.Hidden {
			cmd.Sub[child.Name] = completionModel(child)
		}
	}
	var args positionals
	for _, f := range node.Flags {
		if f == nil || f.Hidden {
			continue
		}
		for _, name := range flagSpellings(f) {
			cmd.GlobalFlags[name] = valueCompletion(f.Value)
			args.flags = append(args.flags, name)
			if !f.Value.IsBool() {
				args.valueFlags = append(args.valueFlags, name)
			}
		}
	}
	for _, p := range node.Positional {
		args.values = append(args.values, valueCompletion(p))
	}
	cmd.Args = args
	return cmd
}

// flagSpellings are the words that name flag f: --name, and -s when it has a short form.
func flagSpellings(f *kong.Flag) []string {
	names := []string{"--" + f.Name}
	if f.Short != 0 {
		names = append(names, "-"+string(f.Short))
	}
	return names
}

// valueCompletion is what completes a value: nothing after a boolean flag, the choices of
// an enum, any word otherwise.
func valueCompletion(v *kong.Value) complete.Predictor {
	switch {
	case v.IsBool():
		return complete.PredictNothing
	case v.Enum != "":
		var set []string
		for e := range v.EnumMap() {
			set = append(set, e)
		}
		slices.Sort(set)
		return complete.PredictSet(set...)
	}
	return complete.PredictAnything
}

// positionals completes a command's positional arguments: the word being typed is the
// n-th positional when n completed words before it are neither a flag of the command
// (--config, --config=FILE) nor the value of one that takes it (--config FILE).
type positionals struct {
	values     []complete.Predictor
	flags      []string // the spellings of the command's flags
	valueFlags []string // those of the flags that take a value
}

func (p positionals) Predict(a complete.Args) []string {
	n := 0
	for i, w := range a.Completed {
		name, _, _ := strings.Cut(w, "=")
		if slices.Contains(p.flags, name) || i > 0 && slices.Contains(p.valueFlags, a.Completed[i-1]) {
			continue
		}
		n++
	}
	if n >= len(p.values) || p.values[n] == nil {
		return nil
	}
	return p.values[n].Predict(a)
}
