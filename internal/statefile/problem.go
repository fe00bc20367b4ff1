package statefile

import (
	"errors"
	"fmt"
)

// Problem is a value of a decoded state file that its package refuses: At is the
// path to the value (object keys and array indexes, as Locate takes them), Field
// how messages name it, Msg what is wrong.
type Problem struct {
	At    []string
	Field string
	Msg   string
}

// Located joins problems as errors "FILE:LINE:COL: FIELD: MSG", each placed in
// data; nil when there are none.
func Located(file string, data []byte, probs []Problem) error {
	var errs []error
	for _, p := range probs {
		errs = append(errs, fmt.Errorf("%s: %s: %s", Locate(file, data, p.At...), p.Field, p.Msg))
	}
	return errors.Join(errs...)
}

// Unplaced joins problems as errors "FIELD: MSG", for a value not written to a
// file yet; nil when there are none.
func Unplaced(probs []Problem) error {
	var errs []error
	for _, p := range probs {
		errs = append(errs, fmt.Errorf("%s: %s", p.Field, p.Msg))
	}
	return errors.Join(errs...)
}
