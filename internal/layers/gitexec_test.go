package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gitRunner is the one package that may start git: it scrubs git's environment, turns
// off what config can make git run, and checks the repository's config first.
const gitRunner = "gitguard/gitrun"

// gitStartExempt are the other packages that start git, each with why.
var gitStartExempt = map[string]string{
	// Builds the repositories tests run on, never linked into a binary (no command
	// imports it; TestImportsFollowTheDiagram keeps it out of the diagram).
	"internal/gittest": "test fixture builder",
}

// starters are the calls that start a program (or find one to start), with the index of
// the argument that names the program.
var starters = map[string]int{
	"os/exec.Command": 0, "os/exec.CommandContext": 1, "os/exec.LookPath": 0,
	"os.StartProcess": 0, "syscall.Exec": 0, "syscall.ForkExec": 0, "syscall.StartProcess": 0,
	"golang.org/x/sys/unix.Exec": 0,
}

// TestGitStartsOnlyInTheRunner: no non-test code outside gitguard/gitrun starts git (or
// looks it up on PATH to start it), by a "git" literal, a constant or variable holding
// one, or a name that says it holds git's path.
func TestGitStartsOnlyInTheRunner(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		if _, ok := gitStartExempt[pkg]; ok || pkg == gitRunner {
			return nil
		}
		files++
		for _, f := range gitStarts(t, p) {
			t.Errorf("%s: starts git outside %s: go through gitguard (Worktrees) instead", f, gitRunner)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("looked at %d files: the walk missed the module", files)
	}
}

// gitStarts returns the positions in the file at path where a program start names git.
func gitStarts(t *testing.T, path string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]string{} // local name → import path
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	gitNames := gitValued(f)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if i, ok := starterArg(n, imports); ok && i < len(n.Args) && isGit(n.Args[i], gitNames) {
				out = append(out, fset.Position(n.Pos()).String())
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Path" && isGit(n.Value, gitNames) {
				out = append(out, fset.Position(n.Pos()).String()) // exec.Cmd{Path: git}
			}
		}
		return true
	})
	return out
}

// starterArg reports whether call is one of starters, and its program argument's index.
func starterArg(call *ast.CallExpr, imports map[string]string) (int, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return 0, false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return 0, false
	}
	i, ok := starters[imports[x.Name]+"."+sel.Sel.Name]
	return i, ok
}

// gitValued lists the constants and variables of the file set to a "git" literal.
func gitValued(f *ast.File) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for k, v := range n.Values {
				if k < len(n.Names) && isGitLiteral(v) {
					names[n.Names[k].Name] = true
				}
			}
		case *ast.AssignStmt:
			for k, v := range n.Rhs {
				if id, ok := n.Lhs[min(k, len(n.Lhs)-1)].(*ast.Ident); ok && isGitLiteral(v) {
					names[id.Name] = true
				}
			}
		}
		return true
	})
	return names
}

// isGit reports whether e names git: a "git" literal (or a path ending in /git), a name
// set to one, or a name that says it is git's (git, gitPath, r.gitBin, ...).
func isGit(e ast.Expr, gitNames map[string]bool) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return isGitLiteral(e)
	case *ast.Ident:
		return gitNames[e.Name] || strings.HasPrefix(strings.ToLower(e.Name), "git")
	case *ast.SelectorExpr:
		return strings.HasPrefix(strings.ToLower(e.Sel.Name), "git")
	case *ast.ParenExpr:
		return isGit(e.X, gitNames)
	}
	return false
}

func isGitLiteral(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && (s == "git" || strings.HasSuffix(s, "/git"))
}
