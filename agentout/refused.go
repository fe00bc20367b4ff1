package agentout

import (
	"bytes"
	"strconv"
	"strings"
)

// refusalMarks are what a refused file operation prints, whichever tool met it: the
// kernel's words for EACCES, EROFS and EPERM. Under hgate's sandbox a write outside
// allow meets one of them.
var refusalMarks = [][]byte{[]byte("Permission denied"), []byte("Read-only file system"), []byte("Operation not permitted")}

// Refusals is what the agent's output showed of operations the system refused: how many
// lines said so, where (claude's tool results, codex's command output, or the plain
// output), and the first such line, cut short.
type Refusals struct {
	Count   int
	Source  string
	Example string
}

// String is the refusal as the loop's line and learnings.md say it, "" when none.
func (f Refusals) String() string {
	if f.Count == 0 {
		return ""
	}
	return "writes outside allow were refused (" + strconv.Itoa(f.Count) + " in " + f.Source + ", e.g. " + strconv.Quote(f.Example) + ")"
}

// exampleLimit bounds the quoted example.
const exampleLimit = 160

// refusal looks for a refusal in one line of output.
func (r *Run) refusal(line []byte) {
	i := -1
	for _, m := range refusalMarks {
		if j := bytes.Index(line, m); j >= 0 && (i < 0 || j < i) {
			i = j
		}
	}
	if i < 0 {
		return
	}
	r.Refused.Count++
	if r.Refused.Source == "" {
		switch {
		case line[0] != '{':
			r.Refused.Source = "the agent's output"
		case r.Format == FormatCodex:
			r.Refused.Source = "codex's command output"
		default:
			r.Refused.Source = "claude's tool results"
		}
		r.Refused.Example = around(line, i)
	}
}

// around is the text near index i of line, on one line, at most exampleLimit bytes: what a
// JSON line escapes (\n, \") is shown as the tool printed it.
func around(line []byte, i int) string {
	start := max(0, i-exampleLimit/2)
	end := min(len(line), i+exampleLimit/2)
	s := string(line[start:end])
	s = strings.NewReplacer(`\n`, " ", `\"`, `"`, `\t`, " ").Replace(s)
	if k := strings.LastIndexAny(s[:min(len(s), exampleLimit/2)], "\"\n"); k >= 0 && k < len(s)-1 {
		s = s[k+1:]
	}
	if k := strings.IndexAny(s, "\"\n"); k > 0 {
		s = s[:k]
	}
	return strings.ToValidUTF8(strings.TrimSpace(s), "\uFFFD")
}
