package split

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func baseline300() (map[string]*float64, map[string]map[string]string) {
	one, zero := 1.0, 0.0
	b := map[string]*float64{}
	labels := map[string]map[string]string{}
	cats := []string{"web", "data", "sys"}
	diffs := []string{"easy", "hard"}
	for i := range 300 {
		id := fmt.Sprintf("t%03d", i)
		r := &zero
		if i%3 == 0 {
			r = &one
		}
		b[id] = r
		labels[id] = map[string]string{"category": cats[i%3], "difficulty": diffs[(i/3)%2]}
	}
	return b, labels
}

// TestMakePlanIsMakeWithoutFinalOrLabels: an old plan makes the split Make makes.
func TestMakePlanIsMakeWithoutFinalOrLabels(t *testing.T) {
	b, _ := baseline300()
	s, ex := Make(b, 0.3, 7)
	m := MakePlan(b, Plan{TestFraction: 0.3, Seed: 7})
	if !reflect.DeepEqual(m.Split, s) || !reflect.DeepEqual(m.Excluded, ex) {
		t.Fatal("MakePlan without a final share or labels differs from Make")
	}
}

// TestMakePlanStratifies: every stratum (pass/fail × category × difficulty) is in each
// split in proportion, within one task, and the splits' sizes are the shares of the whole.
func TestMakePlanStratifies(t *testing.T) {
	b, labels := baseline300()
	m := MakePlan(b, Plan{TestFraction: 0.4, FinalFraction: 0.2, MinFinal: 30, Seed: 3, Labels: labels, Stratify: []string{"category", "difficulty"}})
	s := m.Split
	if len(s.Test) != 120 || len(s.Final) != 60 || len(s.Train) != 120 || m.FinalNote != "" {
		t.Fatalf("sizes train %d test %d final %d (%q)", len(s.Train), len(s.Test), len(s.Final), m.FinalNote)
	}
	if _, err := s.Marshal(); err != nil {
		t.Fatal(err)
	}
	count := func(ids []string) map[string]int {
		c := map[string]int{}
		for _, id := range ids {
			pass := "fail"
			if *b[id] == 1 {
				pass = "pass"
			}
			c[pass+"/"+LabelKey(labels[id], s.Stratify)]++
		}
		return c
	}
	all := count(append(append(append([]string{}, s.Train...), s.Test...), s.Final...))
	for name, ids := range map[string][]string{"test": s.Test, "final": s.Final} {
		got := count(ids)
		share := float64(len(ids)) / 300
		for k, n := range all {
			if want := share * float64(n); float64(got[k]) < want-1 || float64(got[k]) > want+1 {
				t.Errorf("%s holds %d of stratum %s (%d tasks), want %.1f ± 1", name, got[k], k, n, want)
			}
		}
	}
}

// TestMakePlanSmallFinal: a final split under its minimum is not made, and says why.
func TestMakePlanSmallFinal(t *testing.T) {
	one := 1.0
	b := map[string]*float64{}
	for i := range 44 {
		b[fmt.Sprintf("t%02d", i)] = &one
	}
	m := MakePlan(b, Plan{TestFraction: 0.5, FinalFraction: 0.2, MinFinal: 30, Seed: 1})
	if len(m.Split.Final) != 0 || m.FinalNote != "no final split: 9 of 44 tasks would hold it, fewer than the 30 it needs" {
		t.Fatalf("final %v, note %q", m.Split.Final, m.FinalNote)
	}
	if len(m.Split.Test) != 22 || len(m.Split.Train) != 22 {
		t.Fatalf("train %d test %d", len(m.Split.Train), len(m.Split.Test))
	}
}

// TestMakePlanSmallFinalIsMake: with no final split made and no labels asked for, the
// split is Make's bit for bit, so a small workspace is split as before the final share
// existed (the bundled example's split.json is unchanged).
func TestMakePlanSmallFinalIsMake(t *testing.T) {
	b, _ := baseline300()
	for _, n := range []int{10, 40, 120} {
		small := map[string]*float64{}
		for i := range n {
			id := fmt.Sprintf("t%03d", i)
			small[id] = b[id]
		}
		s, ex := Make(small, 0.3, 42)
		m := MakePlan(small, Plan{TestFraction: 0.3, FinalFraction: 0.2, MinFinal: 30, Seed: 42})
		if m.FinalNote == "" || !reflect.DeepEqual(m.Split, s) || !reflect.DeepEqual(m.Excluded, ex) {
			t.Fatalf("%d tasks: MakePlan with no final made differs from Make (note %q)", n, m.FinalNote)
		}
	}
}

// TestTooFewForFinal: the reason status gives for a workspace without a final split is
// the one MakePlan gave when it made none.
func TestTooFewForFinal(t *testing.T) {
	for _, total := range []int{10, 44, 149, 150, 151, 300} {
		base := map[string]*float64{}
		for i := range total {
			r := float64(i % 2)
			base[fmt.Sprintf("t%03d", i)] = &r
		}
		made := MakePlan(base, Plan{TestFraction: 0.3, FinalFraction: 0.2, MinFinal: 30, Seed: 1})
		got := TooFewForFinal(total, 0.2, 30)
		if want := strings.TrimPrefix(made.FinalNote, "no final split: "); got != want {
			t.Errorf("%d tasks: %q, MakePlan said %q", total, got, want)
		}
		if (got == "") != (len(made.Split.Final) > 0) {
			t.Errorf("%d tasks: %q with %d final tasks", total, got, len(made.Split.Final))
		}
	}
	if got := TooFewForFinal(44, 0, 30); got != "" {
		t.Errorf("no final share: %q", got)
	}
}
