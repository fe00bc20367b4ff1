package lock

import (
	"os"
	"testing"

	"github.com/hgate/hgate/internal/proc"
)

func TestParseStat(t *testing.T) {
	tail := " 1 1 0 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 200"
	tests := []struct {
		name, stat string
		want       procStat
		wantErr    bool
	}{
		{name: "plain", stat: "42 (hgate) S" + tail, want: procStat{state: 'S', ticks: 987654}},
		{name: "name with spaces and parens", stat: "42 (a) b (c) R" + tail, want: procStat{state: 'R', ticks: 987654}},
		{name: "zombie", stat: "42 (hgate) Z" + tail, want: procStat{state: 'Z', ticks: 987654}},
		{name: "no name", stat: "42 hgate S" + tail, wantErr: true},
		{name: "truncated", stat: "42 (hgate) S 1 1 0", wantErr: true},
		{name: "start not a number", stat: "42 (hgate) S 1 1 0 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 x 1000", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.stat))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestRunning(t *testing.T) {
	self := os.Getpid()
	ticks, err := startTicks(self)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    owner
		want bool
	}{
		{"this process", owner{PID: self, StartTicks: ticks}, true},
		{"this pid, other start", owner{PID: self, StartTicks: ticks + 1}, false},
		{"no start time known", owner{PID: self}, true},
		{"dead", owner{PID: deadPID(t)}, false},
		{"no pid", owner{}, false},
	}
	for _, tt := range tests {
		if got := running(tt.o); got != tt.want {
			t.Errorf("%s: running = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func parseStat(data []byte) (procStat, error) {
	st, err := proc.ParseStat(data)
	return procStat{state: st.State, ticks: st.StartTicks}, err
}
