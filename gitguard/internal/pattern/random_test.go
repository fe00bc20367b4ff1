package pattern

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

var randomCases = flag.Int("matchvsgit.random", 0, "TestMatchVsGitRandom: how many generated cases to check against git (0: skip)")

var randomSeed = flag.Uint64("matchvsgit.seed", 1, "TestMatchVsGitRandom: the seed of the generated cases")

// TestMatchVsGitRandom is FuzzMatchVsGit's check on cases built from glob
// pieces and paths derived from them, many per git call: a faster search
// than byte mutation, run by hand (go test -run TestMatchVsGitRandom
// -args -matchvsgit.random=100000).
func TestMatchVsGitRandom(t *testing.T) {
	if *randomCases == 0 {
		t.Skip("run with -args -matchvsgit.random=N")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := scratchRepo(t)
	rng := rand.New(rand.NewPCG(*randomSeed, 0))
	const batch = 200
	for done := 0; done < *randomCases; done += batch {
		var stdin bytes.Buffer
		cases := make([]gitCase, batch)
		for k := range cases {
			for {
				lines, paths := randomCase(rng)
				if c, ok := newGitCase(lines, paths); ok {
					cases[k] = c
					break
				}
			}
			cases[k].write(t, root, "c"+strconv.Itoa(k)+"/", &stdin)
		}
		got := checkIgnore(t, root, stdin.Bytes())
		for k, c := range cases {
			c.verify(t, got, "c"+strconv.Itoa(k)+"/")
			c.remove(root, "c"+strconv.Itoa(k)+"/")
		}
	}
}

// pieces of patterns, each with strings it may match in a path.
var pieces = []struct {
	glob    string
	matches []string
}{
	{"a", []string{"a"}}, {"b", []string{"b"}}, {"x", []string{"x"}}, {".", []string{"."}},
	{"*", []string{"", "a", "xb", "a.b"}}, {"**", []string{"", "a", "a/b", "x/y/z"}},
	{"?", []string{"a", "?", "-"}}, {"/", []string{"/"}}, {"/", []string{"/"}},
	{"[ab]", []string{"a", "b"}}, {"[!a]", []string{"b", "!"}}, {"[^a]", []string{"b", "^"}},
	{"[a-c]", []string{"b", "-"}}, {"[]a]", []string{"]", "a"}}, {"[a-]", []string{"-", "a"}},
	{"[[:alpha:]]", []string{"q", "1"}}, {"[[:digit:]]", []string{"7", "a"}}, {"[[:space:]]", []string{" ", "\t"}},
	{"[[:punct:]]", []string{".", "["}}, {"[[:bogus:]]", []string{"b"}}, {"[[:alpha:]", []string{"a"}},
	{"[[]", []string{"["}}, {"[\\]]", []string{"]"}}, {"[", []string{"["}}, {"]", []string{"]"}},
	{"\\*", []string{"*"}}, {"\\", []string{"\\"}}, {"\\ ", []string{" "}}, {"\\!", []string{"!"}},
	{"\\#", []string{"#"}}, {" ", []string{" "}}, {"!", []string{"!"}}, {"#", []string{"#"}},
	{"-", []string{"-"}}, {":", []string{":"}}, {"[/]", []string{"/"}}, {"\\/", []string{"/"}},
}

// randomCase builds pattern lines from pieces and paths matching them more
// or less.
func randomCase(rng *rand.Rand) (lines, paths string) {
	var ls, ps []string
	for range 1 + rng.IntN(4) {
		var glob, path strings.Builder
		if rng.IntN(4) == 0 {
			glob.WriteString("!")
		}
		for range 1 + rng.IntN(6) {
			pc := pieces[rng.IntN(len(pieces))]
			glob.WriteString(pc.glob)
			path.WriteString(pc.matches[rng.IntN(len(pc.matches))])
		}
		if rng.IntN(6) == 0 {
			glob.WriteString(strings.Repeat(" ", 1+rng.IntN(2)))
		}
		ls = append(ls, glob.String())
		p := path.String()
		if rng.IntN(3) == 0 {
			p = "d/" + p
		}
		if rng.IntN(3) == 0 {
			p += "/e"
		}
		if rng.IntN(4) == 0 {
			p += "/"
		}
		ps = append(ps, p)
	}
	return strings.Join(ls, "\n"), strings.Join(ps, "\n")
}
