//go:build linux

package sandbox

// testRestrict is ruleset.Restrict, which this package's tests cannot import (ruleset
// imports sandbox): the external test package hands it over in its init (ruleset_test.go),
// which runs before TestMain.
var testRestrict func(Policy) error

// SetTestRestrict is how the external test package hands it over.
func SetTestRestrict(f func(Policy) error) { testRestrict = f }
