// Package human formats numbers for people, one way everywhere hgate prints them (the
// loop's log, learnings.md, the report): dollars to the cent, scores to 4 decimals,
// counts grouped by thousands, durations as 1m23s; and others' text (the agent's) with
// its control characters written out. Machine-read files (summary.json, --json) keep the
// raw values.
package human

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// USD is dollars to the cent: "$0.60". A spend under a cent but above zero reads "<$0.01"
// so that it does not look like nothing.
func USD(x float64) string {
	if x > 0 && x < 0.005 {
		return "<$0.01"
	}
	return "$" + Group(fmt.Sprintf("%.2f", x))
}

// Score is a val_score to 4 decimals.
func Score(x float64) string { return fmt.Sprintf("%.4f", x) }

// Count is an integer grouped by thousands: 12,345.
func Count[T ~int | ~int64](n T) string { return Group(strconv.FormatInt(int64(n), 10)) }

// Tokens is a token count: "12,345 tokens".
func Tokens[T ~int | ~int64](n T) string {
	if n == 1 {
		return "1 token"
	}
	return Count(n) + " tokens"
}

// Seconds is a duration given in seconds, rounded to the second (to the tenth under ten
// seconds): 1m23s, 4.2s.
func Seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < 10*time.Second {
		return strconv.FormatFloat(math.Round(s*10)/10, 'f', -1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// Group puts a comma between each group of three digits of the integer part of a
// formatted number: "12345.60" reads "12,345.60".
func Group(s string) string {
	start := 0
	if start < len(s) && s[start] == '-' {
		start++
	}
	end := start
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	digits := s[start:end]
	if len(digits) <= 3 {
		return s
	}
	var b []byte
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, digits[i])
	}
	return s[:start] + string(b) + s[end:]
}
