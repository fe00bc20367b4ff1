package lazyre

import "testing"

func TestGetCompilesOnce(t *testing.T) {
	re := New(`^a(b+)$`)
	if re.re != nil {
		t.Fatal("compiled before its first use")
	}
	first := re.Get()
	if m := first.FindStringSubmatch("abbb"); len(m) != 2 || m[1] != "bbb" {
		t.Fatalf("match = %q", m)
	}
	if re.Get() != first {
		t.Error("compiled twice")
	}
}

func TestInvalidPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("an invalid expression did not panic at its first use")
		}
	}()
	New(`(`).Get()
}
