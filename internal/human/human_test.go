package human

import "testing"

func TestFormats(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{USD(0.1 + 0.2 + 0.3), "$0.60"},
		{USD(0), "$0.00"},
		{USD(0.004), "<$0.01"},
		{USD(12345.678), "$12,345.68"},
		{Score(2.0 / 3), "0.6667"},
		{Count(12345), "12,345"},
		{Count(int64(-1234567)), "-1,234,567"},
		{Count(999), "999"},
		{Tokens(1), "1 token"},
		{Tokens(int64(1000)), "1,000 tokens"},
		{Seconds(83.4), "1m23s"},
		{Seconds(4.25), "4.3s"},
		{Seconds(3723), "1h2m3s"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
