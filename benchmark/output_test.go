package benchmark

import (
	"bytes"
	"fmt"
	"testing"
)

// The ring keeps exactly the last n bytes, whatever the sizes of the writes.
func TestLastBytes(t *testing.T) {
	for _, tc := range []struct {
		n      int
		writes []int
	}{
		{n: 8, writes: nil},
		{n: 8, writes: []int{3}},
		{n: 8, writes: []int{8}},
		{n: 8, writes: []int{5, 3}},
		{n: 8, writes: []int{5, 4}},
		{n: 8, writes: []int{20}},
		{n: 8, writes: []int{7, 7, 7, 1, 9, 2}},
		{n: 8, writes: []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		t.Run(fmt.Sprint(tc.n, tc.writes), func(t *testing.T) {
			l := lastBytes{n: tc.n}
			var all []byte
			next := byte('a')
			for _, size := range tc.writes {
				p := make([]byte, size)
				for i := range p {
					p[i] = next
					next = 'a' + (next-'a'+1)%26
				}
				all = append(all, p...)
				l.write(p)
			}
			var got bytes.Buffer
			if err := l.writeTo(&got); err != nil {
				t.Fatal(err)
			}
			want := all[max(0, len(all)-tc.n):]
			if !bytes.Equal(got.Bytes(), want) || l.total != int64(len(all)) {
				t.Errorf("kept %q (total %d), want %q (total %d)", got.Bytes(), l.total, want, len(all))
			}
		})
	}
}
