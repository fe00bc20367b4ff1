//go:build linux

package sandbox_test

import (
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/sandbox/ruleset"
)

func init() { sandbox.SetTestRestrict(ruleset.Restrict) }
