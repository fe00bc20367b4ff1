package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/hgate/hgate/finalscore"
	"github.com/hgate/hgate/internal/human"
	"github.com/hgate/hgate/runlog"
)

// Colours of the plots; the rendering test looks for BestColour's pixels.
const (
	BestColour     = "#0969da" // the best line
	KeptColour     = "#1a7f37" // a kept attempt; hollow: passed, not recorded
	RejectedColour = "#cf222e" // a rejected attempt
	SuiteColour    = "#8250df"
	AgentColour    = "#bf8700"
	GateColour     = "#57606a"
)

// WriteHTML writes the report as one self-contained HTML page: inline CSS and SVG, no
// script, nothing fetched.
func (r *Report) WriteHTML(w io.Writer) error {
	return page().Execute(w, struct {
		*Report
		ScorePlot, SuitePlot, DurationPlot template.HTML
		SpendPlot                          template.HTML
		Kept, Rejected, GatesRejected      int
		Colours                            map[string]string
	}{
		Report:        r,
		ScorePlot:     template.HTML(r.scorePlot()),
		SuitePlot:     template.HTML(r.suitePlot()),
		DurationPlot:  template.HTML(r.durationPlot()),
		SpendPlot:     template.HTML(r.spendPlot()),
		Kept:          r.count(func(a Attempt) bool { return a.Kept }),
		Rejected:      r.rejectedIterations(),
		GatesRejected: r.count(func(a Attempt) bool { return a.Verdict != "pass" }),
		Colours: map[string]string{"best": BestColour, "kept": KeptColour, "rejected": RejectedColour,
			"suite": SuiteColour, "agent": AgentColour, "gate": GateColour},
	})
}

// rejectedIterations counts the loop's rejected iterations over its runs, as the loop's
// "N rejected" does: an iteration whose gate and repairs were all rejected counts once,
// and a candidate set aside for a merge conflict (never gated) counts too.
func (r *Report) rejectedIterations() int {
	n := 0
	for _, run := range r.Runs {
		for _, it := range run.Iterations {
			if it.Outcome == runlog.OutcomeRejected {
				n++
			}
		}
	}
	return n
}

func (r *Report) count(f func(Attempt) bool) int {
	n := 0
	for _, a := range r.Attempts {
		if f(a) {
			n++
		}
	}
	return n
}

// plot maps data coordinates onto an SVG of the given size, with room for axes.
type plot struct {
	b              strings.Builder
	w, h           float64
	left, right    float64 // margins
	top, bottom    float64
	x0, x1, y0, y1 float64 // data ranges
}

func newPlot(w, h, x0, x1, y0, y1 float64, label string) *plot {
	p := &plot{w: w, h: h, left: 56, right: 16, top: 12, bottom: 36, x0: x0, x1: x1, y0: y0, y1: y1}
	if p.x1 <= p.x0 {
		p.x1 = p.x0 + 1
	}
	if p.y1 <= p.y0 {
		p.y1 = p.y0 + 1
	}
	fmt.Fprintf(&p.b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s">`,
		w, h, w, h, html.EscapeString(label))
	fmt.Fprintf(&p.b, `<rect x="%g" y="%g" width="%g" height="%g" fill="#ffffff" stroke="#d0d7de"/>`,
		p.left, p.top, w-p.left-p.right, h-p.top-p.bottom)
	return p
}

func (p *plot) X(x float64) float64 {
	return math.Round(p.left + (x-p.x0)/(p.x1-p.x0)*(p.w-p.left-p.right))
}

func (p *plot) Y(y float64) float64 {
	return math.Round(p.top + (p.y1-y)/(p.y1-p.y0)*(p.h-p.top-p.bottom))
}

// axes draws y gridlines with labels (format for each value) and x ticks at the whole
// numbers, at most about 20 of them.
func (p *plot) axes(yTicks []float64, yFormat, xTitle string) {
	var xTicks []float64
	step := math.Max(1, math.Ceil((p.x1-p.x0)/20))
	for x := math.Ceil(p.x0); x <= p.x1; x += step {
		xTicks = append(xTicks, x)
	}
	p.axesAt(yTicks, yFormat, xTicks, "%g", xTitle)
}

// axesAt draws y gridlines and x ticks at the given values, each labelled by its format.
func (p *plot) axesAt(yTicks []float64, yFormat string, xTicks []float64, xFormat, xTitle string) {
	for _, t := range yTicks {
		y := p.Y(t)
		fmt.Fprintf(&p.b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#eaeef2"/>`, p.left, y, p.w-p.right, y)
		fmt.Fprintf(&p.b, `<text x="%g" y="%g" text-anchor="end" font-size="11" fill="#57606a">`+yFormat+`</text>`, p.left-6, y+4, t)
	}
	for _, x := range xTicks {
		px := p.X(x)
		fmt.Fprintf(&p.b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#8c959f"/>`, px, p.h-p.bottom, px, p.h-p.bottom+4)
		fmt.Fprintf(&p.b, `<text x="%g" y="%g" text-anchor="middle" font-size="11" fill="#57606a">`+xFormat+`</text>`, px, p.h-p.bottom+16, x)
	}
	fmt.Fprintf(&p.b, `<text x="%g" y="%g" text-anchor="middle" font-size="11" fill="#57606a">%s</text>`,
		(p.left+p.w-p.right)/2, p.h-4, html.EscapeString(xTitle))
}

// steps draws a step line through the points (x[i], y[i]): flat until the next x.
func (p *plot) steps(xs, ys []float64, colour, title string) {
	if len(xs) == 0 {
		return
	}
	var pts []string
	for i := range xs {
		if i > 0 {
			pts = append(pts, fmt.Sprintf("%g,%g", p.X(xs[i]), p.Y(ys[i-1])))
		}
		pts = append(pts, fmt.Sprintf("%g,%g", p.X(xs[i]), p.Y(ys[i])))
	}
	if len(xs) == 1 { // one point: a short flat line, so there is something to see
		pts = append(pts, fmt.Sprintf("%g,%g", p.X(xs[0])+12, p.Y(ys[0])))
	}
	fmt.Fprintf(&p.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="3" shape-rendering="crispEdges"><title>%s</title></polyline>`,
		strings.Join(pts, " "), colour, html.EscapeString(title))
}

func (p *plot) String() string { return p.b.String() + "</svg>" }

// niceTicks widens [lo, hi] to whole multiples of a round step (1, 2 or 5 times a power
// of ten) giving at most about n intervals, and returns the widened range and its ticks.
func niceTicks(lo, hi float64, n int) (float64, float64, []float64) {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	lo, hi = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
	var out []float64
	for i := 0; lo+float64(i)*step <= hi+step/2; i++ {
		out = append(out, tidy(lo+float64(i)*step))
	}
	return tidy(lo), tidy(hi), out
}

// tidy drops the binary noise of tick arithmetic: 0.6000000000000001 becomes 0.6, the
// nearest double to what a person reads.
func tidy(x float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 10, 64), 64)
	if err != nil {
		return x
	}
	return v
}

// scorePlot draws val_score over the attempts: the baseline at 0, each attempt as a
// marker (kept: filled, passed but not recorded: hollow, rejected: a cross) and
// the gate's best so far (bestSteps) as a step line.
func (r *Report) scorePlot() string {
	lo, hi := r.Baseline, r.Baseline
	for _, a := range r.Attempts {
		lo, hi = math.Min(lo, a.ValScore), math.Max(hi, a.ValScore)
	}
	lo, hi, yt := niceTicks(math.Max(0, lo-0.05), math.Min(1, hi+0.05), 5)
	p := newPlot(880, 300, 0, float64(len(r.Attempts)), lo, hi, "val_score over gates")
	p.axes(yt, "%.2f", "gate (0: baseline)")
	xs, ys := []float64{0}, bestSteps(r.Baseline, r.Attempts)
	for _, a := range r.Attempts {
		xs = append(xs, float64(a.N))
	}
	best := ys[len(ys)-1]
	p.steps(xs, ys, BestColour, fmt.Sprintf("best: %.4f", best))
	fmt.Fprintf(&p.b, `<g><title>baseline: val_score %.4f</title><rect x="%g" y="%g" width="10" height="10" fill="%s"/></g>`,
		r.Baseline, p.X(0)-5, p.Y(r.Baseline)-5, BestColour)
	for _, a := range r.Attempts {
		x, y := p.X(float64(a.N)), p.Y(a.ValScore)
		what := "rejected"
		switch {
		case a.Kept:
			what = fmt.Sprintf("kept (results.tsv row %d)", *a.Iteration)
		case a.Verdict == "pass":
			what = "passed, not recorded"
		}
		title := fmt.Sprintf("gate %d: val_score %.4f, %s", a.N, a.ValScore, what)
		if len(a.Reasons) > 0 {
			title += "\n" + strings.Join(a.Reasons, "\n")
		}
		fmt.Fprintf(&p.b, `<g class="attempt"><title>%s</title>`, html.EscapeString(title))
		switch {
		case a.Kept:
			fmt.Fprintf(&p.b, `<circle cx="%g" cy="%g" r="6" fill="%s"/>`, x, y, KeptColour)
		case a.Verdict == "pass":
			fmt.Fprintf(&p.b, `<circle cx="%g" cy="%g" r="5" fill="#ffffff" stroke="%s" stroke-width="2"/>`, x, y, KeptColour)
		default:
			fmt.Fprintf(&p.b, `<path d="M%g %gL%g %gM%g %gL%g %g" stroke="%s" stroke-width="2.5"/>`,
				x-5, y-5, x+5, y+5, x-5, y+5, x+5, y-5, RejectedColour)
		}
		p.b.WriteString(`</g>`)
	}
	return p.String()
}

// suitePlot draws the regression suite's size after each attempt.
func (r *Report) suitePlot() string {
	hi := 1.0
	for _, a := range r.Attempts {
		hi = math.Max(hi, float64(a.SuiteSize))
	}
	_, hi, yt := niceTicks(0, hi, int(math.Min(hi, 4)))
	p := newPlot(880, 180, 0, float64(len(r.Attempts)), 0, hi, "regression suite size over gates")
	p.axes(yt, "%.0f", "gate (0: baseline)")
	xs, ys := []float64{0}, []float64{0}
	for _, a := range r.Attempts {
		xs, ys = append(xs, float64(a.N)), append(ys, float64(a.SuiteSize))
	}
	p.steps(xs, ys, SuiteColour, fmt.Sprintf("suite size now: %d", r.SuiteSize))
	return p.String()
}

// durationPlot draws each loop iteration's agent and gate time as stacked bars; empty
// without loop runs.
func (r *Report) durationPlot() string {
	type bar struct {
		label        string
		agent, gateS float64
	}
	var bars []bar
	for _, run := range r.Runs {
		for _, it := range run.Iterations {
			bars = append(bars, bar{fmt.Sprintf("run %s, iteration %d", run.ID, it.Iteration.Iteration), it.AgentSeconds, it.GateSeconds})
		}
	}
	if len(bars) == 0 {
		return ""
	}
	hi := 1.0
	for _, b := range bars {
		hi = math.Max(hi, b.agent+b.gateS)
	}
	_, hi, yt := niceTicks(0, hi, 4)
	p := newPlot(880, 200, 0.5, float64(len(bars))+0.5, 0, hi, "agent and gate seconds per loop iteration")
	p.axes(yt, "%gs", "loop iteration (all runs, in order)")
	width := math.Max(2, math.Min(30, (p.w-p.left-p.right)/float64(len(bars))*0.6))
	for i, b := range bars {
		x := p.X(float64(i+1)) - width/2
		ya, yg := p.Y(b.agent), p.Y(b.agent+b.gateS)
		fmt.Fprintf(&p.b, `<g><title>%s: agent %.1fs, gate %.1fs</title>`, html.EscapeString(b.label), b.agent, b.gateS)
		fmt.Fprintf(&p.b, `<rect x="%g" y="%g" width="%g" height="%g" fill="%s"/>`, x, ya, width, p.Y(0)-ya, AgentColour)
		fmt.Fprintf(&p.b, `<rect x="%g" y="%g" width="%g" height="%g" fill="%s"/></g>`, x, yg, width, ya-yg, GateColour)
	}
	return p.String()
}

// spendPoint is a gated loop iteration placed by what the runs had spent by its end.
type spendPoint struct {
	spent, score float64
	kept         bool
	label        string
}

// spendPlot draws val_score against the loop's cumulative spend, the runs one after the
// other: each gated iteration as a marker (kept: filled, else a cross) and the best kept
// val_score as a step line. Dollars when any were spent, else millions of tokens; empty
// when the runs spent nothing they reported.
func (r *Report) spendPlot() string {
	dollars := r.SpendUSD > 0
	if !dollars && r.SpendTokens == 0 {
		return ""
	}
	var pts []spendPoint
	var before float64 // what earlier runs spent
	start := math.NaN()
	for _, run := range r.Runs {
		for _, it := range run.Iterations {
			if math.IsNaN(start) && it.BestBefore != nil {
				start = *it.BestBefore
			}
			spent := float64(it.CumulativeTokens) / 1e6
			if dollars {
				spent = it.CumulativeUSD
			}
			if it.ValScore == nil {
				continue
			}
			pts = append(pts, spendPoint{before + spent, *it.ValScore, it.Outcome == runlog.OutcomeKept,
				fmt.Sprintf("run %s, iteration %d", run.ID, it.Iteration.Iteration)})
		}
		if dollars {
			before += run.SpendUSD
		} else {
			before += float64(run.SpendTokens) / 1e6
		}
	}
	if math.IsNaN(start) {
		start = r.Baseline
	}
	lo, hi := start, start
	for _, pt := range pts {
		lo, hi = math.Min(lo, pt.score), math.Max(hi, pt.score)
	}
	lo, hi, yt := niceTicks(math.Max(0, lo-0.05), math.Min(1, hi+0.05), 5)
	_, xhi, xt := niceTicks(0, before, 8)
	unit, format := "million tokens", "%gM"
	if dollars {
		unit, format = "dollars", "$%g"
	}
	p := newPlot(880, 300, 0, xhi, lo, hi, "val_score against cumulative spend")
	p.axesAt(yt, "%.2f", xt, format, "cumulative spend of the loop's runs, agent and benchmark ("+unit+")")
	xs, ys := []float64{0}, []float64{start}
	best := start
	for _, pt := range pts {
		if pt.kept {
			best = math.Max(best, pt.score)
		}
		xs, ys = append(xs, pt.spent), append(ys, best)
	}
	xs, ys = append(xs, before), append(ys, best)
	p.steps(xs, ys, BestColour, fmt.Sprintf("best kept val_score: %.4f", best))
	for _, pt := range pts {
		x, y := p.X(pt.spent), p.Y(pt.score)
		what := "not kept"
		if pt.kept {
			what = "kept"
		}
		spent := human.Tokens(int64(math.Round(pt.spent * 1e6)))
		if dollars {
			spent = human.USD(pt.spent)
		}
		fmt.Fprintf(&p.b, `<g class="spend"><title>%s: val_score %.4f, %s, %s spent by then</title>`,
			html.EscapeString(pt.label), pt.score, what, spent)
		if pt.kept {
			fmt.Fprintf(&p.b, `<circle cx="%g" cy="%g" r="6" fill="%s"/>`, x, y, KeptColour)
		} else {
			fmt.Fprintf(&p.b, `<path d="M%g %gL%g %gM%g %gL%g %g" stroke="%s" stroke-width="2.5"/>`,
				x-5, y-5, x+5, y+5, x-5, y+5, x+5, y-5, RejectedColour)
		}
		p.b.WriteString(`</g>`)
	}
	return p.String()
}

// page is parsed on first use: parsed at start, it would cost every command, not only
// hgate report, a quarter of a millisecond. A sync.Once, not a package-level
// sync.OnceValue, which allocates at every start.
var parsed struct {
	once sync.Once
	page *template.Template
}

func page() *template.Template {
	parsed.once.Do(func() { parsed.page = parsePage() })
	return parsed.page
}

// parsePage parses the report's template.
func parsePage() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"score": func(f float64) string { return fmt.Sprintf("%.4f", f) },
		"ival":  func(i finalscore.Interval) string { return i.String() },
		"scorep": func(f *float64) string {
			if f == nil {
				return "–"
			}
			return fmt.Sprintf("%.4f", *f)
		},
		"secs": func(f *float64) string {
			if f == nil {
				return ""
			}
			return human.Seconds(*f)
		},
		"secv":   human.Seconds,
		"usd":    human.USD,
		"tokens": human.Count[int64],
		"deref":  func(f *float64) float64 { return *f },
		"add1":   func(n int) int { return n + 1 },
		"derefi": func(n *int64) int64 { return *n },
		"short":  func(s string) string { return s[:min(7, len(s))] },
		"join":   strings.Join,
		"cell": func(s string) string {
			switch s {
			case "pass":
				return "✓"
			case "fail":
				return "✗"
			case "null":
				return "∅"
			}
			return ""
		},
	}).Parse(pageTemplate))
}

const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hgate report: {{.Repository}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 24px; max-width: 1200px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.sub { color: #57606a; margin: 0 0 12px; }
.facts { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.fact { border: 1px solid #d0d7de; border-radius: 6px; padding: 6px 12px; } .fact b { display: block; font-size: 18px; }
table { border-collapse: collapse; font-size: 13px; } th, td { border: 1px solid #d0d7de; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #116329; font-weight: 600; } .reject { color: #a40e26; font-weight: 600; }
.legend span { margin-right: 16px; } .sw { display: inline-block; width: 12px; height: 12px; vertical-align: -1px; margin-right: 4px; border-radius: 2px; }
.matrix td { width: 18px; height: 18px; padding: 0; text-align: center; font-size: 11px; }
.matrix td.task { width: auto; padding: 0 6px; text-align: left; }
.m-pass { background: #aceebb; } .m-fail { background: #ffcecb; } .m-null { background: #fff1b3; } .m-none { background: #f6f8fa; }
.note { color: #57606a; font-size: 13px; }
svg { max-width: 100%; height: auto; }
.reasons { max-width: 520px; }
</style>
</head>
<body>
<h1>hgate report: {{.Repository}}</h1>
<p class="sub">From the ledger refs/hgate/ledger at {{short .LedgerTip}} ({{.Updated}}) and the loop's run folders.</p>
<div class="facts">
<div class="fact">baseline<b>{{score .Baseline}}</b></div>
<div class="fact">best<b>{{score .Best}}</b></div>
<div class="fact">gates run<b>{{len .Attempts}}</b></div>
<div class="fact">kept<b>{{.Kept}}</b></div>
{{if .Runs}}<div class="fact" title="loop iterations rejected, over the runs (as the loop counts them; a merge conflict included)">rejected<b>{{.Rejected}}</b></div>{{end}}
<div class="fact" title="gates that rejected, repairs' gates and gates run by hand included">gates rejected<b>{{.GatesRejected}}</b></div>
<div class="fact">regression suite<b>{{.SuiteSize}} task(s)</b></div>
<div class="fact">split<b>{{.Split.Train}} train / {{.Split.Test}} test{{if .Split.Final}} / {{.Split.Final}} final{{end}}</b></div>
{{if or .SpendUSD .SpendTokens}}<div class="fact">loop spend<b>{{usd .SpendUSD}}, {{tokens .SpendTokens}} tokens</b></div>{{end}}
</div>

<h2>val_score over gates</h2>
<p class="legend"><span><i class="sw" style="background:{{index .Colours "best"}}"></i>best, what the gate compares with (baseline: square)</span><span><i class="sw" style="background:{{index .Colours "kept"}};border-radius:6px"></i>kept</span><span><i class="sw" style="border:2px solid {{index .Colours "kept"}};border-radius:6px;width:8px;height:8px"></i>passed, not recorded</span><span style="color:{{index .Colours "rejected"}};font-weight:700">✕</span> rejected</p>
<div id="score-plot">{{.ScorePlot}}</div>
<p class="note">val_score is the mean reward over the held-out test split ({{.Split.Test}} tasks): the test split is shown only as this aggregate.</p>

{{with .Final}}<h2>Sealed final split</h2>
<div class="facts" id="final">
<div class="fact">final gain<b>{{ival .FinalGain}}</b></div>
<div class="fact">val gain (test split)<b>{{ival .ValGain}}</b></div>
<div class="fact">val − final gap<b>{{ival .Gap}}</b></div>
<div class="fact">best / baseline on final<b>{{score .BestFinal}} / {{score .BaselineFinal}}</b></div>
</div>
<p class="note">The best ({{short .Commit}}) scored on {{.Tasks}} tasks no gate, agent or bench ever scored, {{.Trials}} trial(s) each, {{.Time}} ({{.By}}); 95% intervals. {{if gt .Gap.Low 0.0}}<b>The gap's interval excludes zero: the val gain overstates what holds on unseen tasks.</b>{{else}}The gap's interval holds zero: no sign the best fitted the test split.{{end}}</p>
<p class="note" id="final-looks">Scored {{.Scored}} time(s), shown {{.Shown}} time(s), as the ledger counts: each look you act on makes it less final.{{if .Pending}} {{.Pending}} showing(s), this one included, wait for the repository lock (a loop holds it) to enter the ledger.{{end}}</p>
{{if .Labels}}<h3>By label</h3>
<table id="labels">
<tr><th>label</th><th>value</th><th>train tasks</th><th>train</th><th>test tasks</th><th>test: best / baseline</th><th>final tasks</th><th>final: best / baseline</th></tr>
{{range .Labels}}<tr><td>{{.Label}}</td><td>{{.Value}}</td>
<td class="num">{{.Train.Tasks}}</td><td class="num">{{scorep .Train.Best}}</td>
<td class="num">{{.Test.Tasks}}</td><td class="num">{{scorep .Test.Best}} / {{scorep .Test.Baseline}}</td>
<td class="num">{{.Final.Tasks}}</td><td class="num">{{scorep .Final.Best}} / {{scorep .Final.Baseline}}</td></tr>
{{end}}</table>
<p class="note">Mean reward of the label's tasks in each split (train: the last full train run, train_results.json). Values with fewer than 5 tasks are pooled.</p>{{end}}
{{end}}{{if .LabelsWithheld}}<p class="note">The per-label scores are left out of a report written in the workspace, which a later run's agent can read: write it elsewhere (hgate report -o FILE) to see them.</p>{{end}}
<h2>Regression suite size</h2>
<div id="suite-plot">{{.SuitePlot}}</div>

<h2>Gates</h2>
{{if .Attempts}}<table>
<tr><th>#</th><th>time</th><th>tree</th><th>verdict</th><th>kept</th><th>val_score</th><th>best then</th><th>suite passed</th><th>suite size</th><th>promoted</th><th>test tasks / nulls</th><th>loop run, iteration</th><th>agent</th><th>gate time</th><th>reasons</th></tr>
{{range .Attempts}}<tr>
<td class="num">{{.N}}</td><td>{{.Time}}</td><td><code>{{short .Tree}}</code></td>
<td class="{{.Verdict}}">{{.Verdict}}</td>
<td>{{if .Kept}}row {{.Iteration}}{{end}}</td>
<td class="num">{{score .ValScore}}</td><td class="num">{{scorep .Best}}</td>
<td class="num">{{.SuitePassed}}/{{.SuiteTotal}}</td><td class="num">{{.SuiteSize}}</td>
<td>{{join .Promoted ", "}}</td>
<td class="num">{{if lt .TestTasks 0}}cut short{{else}}{{.TestTasks}} / {{.Nulls}}{{end}}{{if .Trials}}, {{.Trials}} trial(s), {{.Flaky}} flaky{{end}}</td>
<td>{{if .Run}}{{.Run}}, iteration {{.RunIter}}{{end}}</td>
<td class="num">{{secs .AgentSecs}}</td><td class="num">{{secs .GateSeconds}}</td>
<td class="reasons">{{range .Reasons}}{{.}}<br>{{end}}</td>
</tr>
{{end}}</table>{{else}}<p>No gate has run since prepare.</p>{{end}}

<h2>Kept iterations (results.tsv)</h2>
<table>
<tr><th>row</th><th>val_score</th><th>commit</th><th>evals</th><th>time</th><th>gate</th></tr>
{{range .Rows}}<tr><td class="num">{{.Iteration}}</td><td class="num">{{score .ValScore}}</td><td><code>{{.Commit}}</code></td><td class="num">{{.EvalsPassed}}/{{.EvalsTotal}}</td><td>{{.Time}}</td><td class="num">{{if .Attempt}}{{.Attempt}}{{end}}</td></tr>
{{end}}</table>

<h2>Train tasks across gates</h2>
<p class="note">✓ pass (reward ≥ 0.5), ✗ fail, ∅ no reward, blank: not run. The baseline ran every train task; a gate runs the suite (Step 1) and re-runs the promotion candidates (Step 3). Bold: in the regression suite now.</p>
<table class="matrix">
<tr><th>task</th>{{range .Train.Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Train.Tasks}}<tr><td class="task">{{if .InSuite}}<b>{{.Task}}</b>{{else}}{{.Task}}{{end}}</td>{{range .Results}}<td class="m-{{if .}}{{.}}{{else}}none{{end}}">{{cell .}}</td>{{end}}</tr>
{{end}}</table>

<h2>Loop runs and durations</h2>
{{if .Runs}}<p class="legend"><span><i class="sw" style="background:{{index .Colours "agent"}}"></i>agent</span><span><i class="sw" style="background:{{index .Colours "gate"}}"></i>gate</span></p>
<div id="duration-plot">{{.DurationPlot}}</div>
{{if .SpendPlot}}<h3>val_score against cumulative spend</h3>
<p class="legend"><span><i class="sw" style="background:{{index .Colours "best"}}"></i>best kept val_score</span><span><i class="sw" style="background:{{index .Colours "kept"}};border-radius:6px"></i>kept</span><span style="color:{{index .Colours "rejected"}};font-weight:700">✕</span> not kept</p>
<div id="spend-plot">{{.SpendPlot}}</div>
<p class="note">What each gated iteration had cost by its end — the coding agent's spend (reported, or its tokens priced by loop.prices) and the benchmark's — counted on across the runs in order.</p>{{end}}
{{range .Runs}}<h3>run {{.ID}}</h3>
<p class="sub">started {{.Started}}; {{if .Finished}}stopped: {{.StopReason}}{{if .StopDetail}} ({{.StopDetail}}){{end}}, {{secv .Seconds}}{{else}}no summary: still running, or killed (hgate loop --resume continues it){{end}}; sandbox: {{.Sandbox}}; spent {{usd .SpendUSD}}, {{tokens .SpendTokens}} tokens{{if .BudgetUSD}}, budget {{usd (deref .BudgetUSD)}}{{end}}{{if .BudgetTokens}}, budget {{tokens (derefi .BudgetTokens)}} tokens{{end}}</p>
<table>
<tr><th>iteration</th><th>row</th><th>outcome</th><th>agent</th><th>verdict</th><th>val_score</th><th>gate</th><th>attempts</th><th>agent time</th><th>gate time</th><th>total time</th><th>spent</th><th>spent by then</th><th>agent's tools</th><th>reasons</th></tr>
{{range .Iterations}}<tr><td class="num">{{.Iteration.Iteration}}</td><td class="num">{{if .Row}}{{.Row}}{{end}}</td><td>{{.Outcome}}</td><td>{{.Agent}}{{if .AgentDetail}}: {{.AgentDetail}}{{end}}</td><td>{{if .Verdict}}{{.Verdict}}{{end}}</td><td class="num">{{scorep .ValScore}}</td><td class="num">{{if .Attempt}}{{.Attempt}}{{end}}</td><td class="num">{{add1 .Repairs}}</td><td class="num">{{secv .AgentSeconds}}</td><td class="num">{{secv .GateSeconds}}</td><td class="num">{{secv .Seconds}}</td><td class="num">{{usd .SpendUSD}}{{if .SpendTokens}}, {{tokens .SpendTokens}} tok{{end}}</td><td class="num">{{usd .CumulativeUSD}}{{if .CumulativeTokens}}, {{tokens .CumulativeTokens}} tok{{end}}</td><td>{{with .Harness}}{{len .Active}} active, {{.Calls}} call(s){{if .Quarantined}}, {{len .Quarantined}} quarantined{{end}}{{if .Skipped}}; {{.Skipped}}{{end}}{{end}}</td><td class="reasons">{{range .Reasons}}{{.}}<br>{{end}}</td></tr>
{{end}}</table>
{{with .Gateway}}<table class="gateway">
<tr><th>model gateway</th><th>input</th><th>cache read</th><th>cache write</th><th>output</th><th>dollars</th><th>requests</th><th>refused</th><th>of them, on the budget</th><th>provider errors</th><th>of them, retried</th><th>cut</th></tr>
{{range .}}<tr><td>{{.Phase}}</td><td class="num">{{tokens .Tokens.Input}}</td><td class="num">{{tokens .Tokens.CacheRead}}</td><td class="num">{{tokens .Tokens.CacheWrite}}</td><td class="num">{{tokens .Tokens.Output}}</td><td class="num">{{usd .USD}}{{if .Unpriced}} (a model priced at the dearest){{end}}</td><td class="num">{{.Requests}}</td><td class="num">{{.Refused}}</td><td class="num">{{.Budget}}</td><td class="num">{{.Errors}}</td><td class="num">{{.Retried}}</td><td class="num">{{if .Open}}{{.Open}} (spend an upper bound){{end}}</td></tr>
{{end}}</table>{{end}}
{{end}}{{else}}<p>No loop run in the workspace: the gates above were run by hand (or by an agent calling hgate gate).</p>{{end}}
</body>
</html>
`
