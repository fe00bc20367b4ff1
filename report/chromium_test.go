package report

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestHTMLRendersInChromium renders a report in real headless Chromium (Debian's chromium
// package; .ci/run installs it) and checks on the screenshot that the plots were drawn: the
// best line's colour covers a line's worth of pixels, and the rejected attempts' crosses
// and kept attempts' dots are there. It skips when chromium is not installed, and under
// -short: Chromium's start costs about 3 CPU-s (the page's plots, checked in the HTML,
// are TestSpendPlot's and TestHTMLNumbersReadable's).
func TestHTMLRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium (fast: TestSpendPlot, TestHTMLNumbersReadable)")
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
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	out, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := sample().WriteHTML(out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}

	shot := filepath.Join(dir, "shot.png")
	// Generous: a loaded machine can take long to start a browser; nothing here waits on a
	// clock of its own, chromium exits once the page is loaded and painted (no script).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--no-default-browser-check", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--force-device-scale-factor=1", "--window-size=1200,900", "--screenshot="+shot, "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.WaitDelay = 10 * time.Second
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, output)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", shot, err)
	}
	counts := countColours(img, BestColour, RejectedColour, KeptColour)
	t.Logf("screenshot %v; pixels per colour: %v", img.Bounds().Size(), counts)
	// The best line spans the plot (~800 px wide, 3 px thick); its legend swatch and the
	// baseline's square are 244 px at most.
	if counts[BestColour] < 1500 {
		t.Errorf("the best line is not drawn: %d pixels of %s (expected at least 1500)", counts[BestColour], BestColour)
	}
	// Two rejected crosses (~50 px each), two kept dots (~110 px each); the legend's marks
	// add ~120 px of the kept colour and almost none of the rejected one.
	if counts[RejectedColour] < 50 {
		t.Errorf("the rejected attempts are not drawn: %d pixels of %s", counts[RejectedColour], RejectedColour)
	}
	if counts[KeptColour] < 200 {
		t.Errorf("the kept attempts are not drawn: %d pixels of %s", counts[KeptColour], KeptColour)
	}
}

// countColours counts the pixels within a small distance of each colour ("#rrggbb").
func countColours(img image.Image, colours ...string) map[string]int {
	type rgb struct{ r, g, b int }
	want := map[string]rgb{}
	for _, c := range colours {
		v, _ := strconv.ParseUint(c[1:], 16, 32)
		want[c] = rgb{int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)}
	}
	counts := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			for name, w := range want {
				if near(int(r>>8), w.r) && near(int(g>>8), w.g) && near(int(bl>>8), w.b) {
					counts[name]++
				}
			}
		}
	}
	return counts
}

func near(a, b int) bool { return a-b <= 8 && b-a <= 8 }

// sample is a small history: a baseline, two rejections and two kept changes.
func sample() *Report {
	r := &Report{Repository: "sample", LedgerTip: "0123456789abcdef0123456789abcdef01234567", Updated: "2026-01-02T03:04:05+00:00",
		Split: Split{Seed: 42, Train: 3, Test: 2}, Baseline: 0.5, Best: 0.9, SuiteSize: 2,
		Train: Matrix{Columns: []string{"baseline"}}}
	for i, a := range []struct {
		verdict string
		kept    bool
		score   float64
	}{{"reject", false, 0.3}, {"pass", true, 0.7}, {"reject", false, 0.6}, {"pass", true, 0.9}} {
		n := i + 1
		at := Attempt{N: n, Verdict: a.verdict, Kept: a.kept, ValScore: a.score, Tree: fmt.Sprintf("%040d", n),
			Promoted: []string{}, Reasons: []string{}, SuiteSize: n / 2}
		if a.kept {
			row := n / 2 // results.tsv rows 1 and 2
			at.Iteration = &row
		}
		r.Attempts = append(r.Attempts, at)
		r.Train.Columns = append(r.Train.Columns, strconv.Itoa(n))
	}
	return r
}
