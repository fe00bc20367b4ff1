package proc

import "testing"

func TestParseStat(t *testing.T) {
	tail := " 1 0 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 200"
	tests := []struct {
		name, stat string
		want       Stat
		wantErr    string
	}{
		{name: "plain", stat: "42 (hgate) S 7" + tail, want: Stat{State: 'S', PPid: 7, StartTicks: 987654}},
		{name: "name with spaces and parens", stat: "42 (a) b (c) R 7" + tail, want: Stat{State: 'R', PPid: 7, StartTicks: 987654}},
		{name: "zombie", stat: "42 (hgate) Z 1" + tail, want: Stat{State: 'Z', PPid: 1, StartTicks: 987654}},
		{name: "no name", stat: "42 hgate S 7" + tail, wantErr: "malformed /proc stat: no command name"},
		{name: "truncated", stat: "42 (hgate) S 1 1 0", wantErr: "malformed /proc stat: too few fields"},
		{name: "ppid not a number", stat: "42 (hgate) S x" + tail, wantErr: "malformed /proc stat: parent pid is not a number"},
		{name: "start not a number", stat: "42 (hgate) S 1 1 0 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 x 1000", wantErr: "malformed /proc stat: start time is not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tt.stat))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
