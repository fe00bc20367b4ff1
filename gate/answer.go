package gate

import (
	"fmt"
	"strings"

	"github.com/hgate/hgate/answer"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/human"
)

// The answer types live in package answer, with their text renderers, so that what only
// renders them (the MCP server) need not import the gate; these names keep the gate's
// own code and its callers as they were.
type (
	Answer        = answer.Answer
	Steps         = answer.Steps
	Step0         = answer.Step0
	Step1         = answer.Step1
	Step2         = answer.Step2
	Step3         = answer.Step3
	GuardJSON     = answer.GuardJSON
	BenchJSON     = answer.BenchJSON
	BenchTaskJSON = answer.BenchTaskJSON
)

// ViolationLine formats a violation on one line (answer.ViolationLine).
func ViolationLine(v gitguard.Violation, verb string) string { return answer.ViolationLine(v, verb) }

func step0Reason(v []gitguard.Violation) string {
	paths := make([]string, len(v))
	for i, x := range v {
		paths[i] = fmt.Sprintf("%s (%s)", human.Printable(x.Path, false), x.Kind) // the agent may name a file so
	}
	return fmt.Sprintf("step 0: %d path(s) changed outside allow: %s", len(v), strings.Join(paths, ", "))
}

func percent(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }
