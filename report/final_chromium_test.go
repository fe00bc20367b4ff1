package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/finalscore"
	"github.com/hgate/hgate/gate"
)

// sampleFinal is sample() with a final score whose gap excludes zero, and two labels.
func sampleFinal() *Report {
	r := sample()
	r.Split.Final = 60
	f := func(x float64) *float64 { return &x }
	r.Final = &gate.FinalScore{Time: "2026-01-02T04:00:00Z", By: "hgate final", Commit: strings.Repeat("ab", 20), Tree: strings.Repeat("cd", 20),
		Tasks: 60, Trials: 1, BaselineFinal: 0.42, BestFinal: 0.30,
		FinalGain: finalscore.Interval{Mean: -0.1167, Low: -0.2888, High: 0.0554, N: 60},
		ValGain:   finalscore.Interval{Mean: 0.1333, Low: 0.0211, High: 0.2456, N: 120},
		Gap:       finalscore.Interval{Mean: 0.25, Low: 0.0439, High: 0.4561, N: 60},
		Scored:    3, Shown: 7,
		Labels: []gate.LabelScore{
			{Label: "category", Value: "web-MARK", Train: gate.SplitScore{Tasks: 30, Best: f(0.5)}, Test: gate.SplitScore{Tasks: 30, Best: f(0.6), Baseline: f(0.4)}, Final: gate.SplitScore{Tasks: 15, Best: f(0.3), Baseline: f(0.4)}},
			{Label: "difficulty", Value: gate.Pooled, Train: gate.SplitScore{Tasks: 4}, Test: gate.SplitScore{Tasks: 3, Best: f(1), Baseline: f(0)}, Final: gate.SplitScore{Tasks: 2, Best: f(0), Baseline: f(0)}},
		}}
	return r
}

// TestFinalLabelsRenderInChromium renders a label-aware report in headless Chromium and
// reads the DOM Chromium built: the final split's facts, the gap's verdict, the looks'
// count and one row per label value are there. A page withheld for the workspace has no
// label table and says why.
func TestFinalLabelsRenderInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium twice")
	}
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install chromium): the HTML report is not rendered")
	}
	full, withheld := sampleFinal(), sampleFinal()
	withheld.WithholdLabels()
	if full.Final.Labels == nil || withheld.Final.Labels != nil || !withheld.LabelsWithheld {
		t.Fatal("WithholdLabels changed the wrong report, or none")
	}
	dom := renderDOM(t, bin, full)
	for _, want := range []string{`id="final"`, "val − final gap", "+0.2500 [+0.0439, +0.4561]", "excludes zero",
		"Scored 3 time(s), shown 7 time(s)", `<table id="labels">`, "<td>web-MARK</td>", "<td>" + gate.Pooled + "</td>", "60 final"} {
		if !strings.Contains(dom, want) {
			t.Errorf("Chromium's DOM lacks %q", want)
		}
	}
	dom = renderDOM(t, bin, withheld)
	if strings.Contains(dom, "web-MARK") || !strings.Contains(dom, "per-label scores are left out") {
		t.Error("the withheld page shows the labels, or does not say they are left out")
	}
}

// renderDOM loads r's page in headless Chromium and returns the DOM it built.
func renderDOM(t *testing.T, bin string, r *Report) string {
	t.Helper()
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	out, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--no-default-browser-check", "--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.WaitDelay = 10 * time.Second
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return string(dom)
}
