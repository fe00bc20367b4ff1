package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// field is one key of a section of hgate.yaml: how its value is decoded, checked and stored
// in the section's struct S. A section is a table of fields (see sections.go), decoded by
// decodeSection; what one key's value means is said once, in its row.
type field[S any] struct {
	key      string
	keepNull bool   // no value keeps the default (loop.stop_score, loop.until, clean_room.home)
	missing  string // the key is required: the message when it is absent
	decode   func(d *decoder, e entry, p string, s *S)
}

// keysOf lists a table's keys in its order, the order messages name them in.
func keysOf[S any](fields []field[S]) []string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.key
	}
	return keys
}

// decodeSection decodes n, the value of the section at path p, into s: a mapping whose keys
// are the fields', each decoded in the table's order. A required key that is absent is
// reported at the node at (the section's own key; nil for the file). It returns the
// entries, for the checks that span keys; ok is false when n is not a mapping.
func decodeSection[S any](d *decoder, at, n *yaml.Node, p string, fields []field[S], s *S) (map[string]entry, bool) {
	m, ok := d.mapping(n, p, keysOf(fields))
	if !ok {
		return nil, false
	}
	for _, f := range fields {
		e, ok := m[f.key]
		switch {
		case !ok && f.missing != "":
			d.failf(at, join(p, f.key), "%s", f.missing)
		case !ok, f.keepNull && isNull(e.val):
		default:
			f.decode(d, e, join(p, f.key), s)
		}
	}
	return m, true
}

// inRange reports a value's problem, if any, as "VALUE PROBLEM"; shown is the value as
// the message spells it.
func (d *decoder) inRange(n *yaml.Node, p, shown, problem string) bool {
	if problem == "" {
		return true
	}
	d.failf(n, p, "%s %s", shown, problem)
	return false
}

// intField is a whole number within int; check (nil: any) says what is wrong with it.
func intField[S any](key, example string, check func(int) string, set func(*S, int)) field[S] {
	return field[S]{key: key, decode: func(d *decoder, e entry, p string, s *S) {
		if v, ok := d.smallInt(e.val, p, example); ok && d.inRange(e.val, p, fmt.Sprint(v), problemOf(check, v)) {
			set(s, v)
		}
	}}
}

// numberField is a finite number; check (nil: any) says what is wrong with it.
func numberField[S any](key, example string, check func(float64) string, set func(*S, float64)) field[S] {
	return field[S]{key: key, decode: func(d *decoder, e entry, p string, s *S) {
		if v, ok := d.number(e.val, p, example); ok && d.inRange(e.val, p, describe(e.val), problemOf(check, v)) {
			set(s, v)
		}
	}}
}

// durationField is a Go duration with a unit; check (nil: any) says what is wrong with it.
func durationField[S any](key, example string, check func(time.Duration) string, set func(*S, time.Duration)) field[S] {
	return field[S]{key: key, decode: func(d *decoder, e entry, p string, s *S) {
		if v, ok := d.duration(e.val, p, example); ok && d.inRange(e.val, p, describe(e.val), problemOf(check, v)) {
			set(s, v)
		}
	}}
}

// textField is a string; check (nil: any) returns the whole message of what is wrong.
func textField[S any](key, expected string, check func(d *decoder, n *yaml.Node, v string) string, set func(*S, string)) field[S] {
	return field[S]{key: key, decode: func(d *decoder, e entry, p string, s *S) {
		v, ok := d.text(e.val, p, expected)
		if !ok {
			return
		}
		if check != nil {
			if msg := check(d, e.val, v); msg != "" {
				d.failf(e.val, p, "%s", msg)
				return
			}
		}
		set(s, v)
	}}
}

// boolField is true or false.
func boolField[S any](key string, set func(*S, bool)) field[S] {
	return field[S]{key: key, decode: func(d *decoder, e entry, p string, s *S) {
		if v, ok := d.boolean(e.val, p); ok {
			set(s, v)
		}
	}}
}

// nodeField decodes its value with a function of the decoder's own (a list, a command, a
// mapping of variables, a section).
func nodeField[S any](key string, decode func(d *decoder, e entry, p string, s *S)) field[S] {
	return field[S]{key: key, decode: decode}
}

// sectionField is a key whose value is a section of its own, decoded by its table into
// the part of S that dst names.
func sectionField[S, T any](key string, fields []field[T], dst func(*S) *T) field[S] {
	return nodeField(key, func(d *decoder, e entry, p string, s *S) { decodeSection(d, e.key, e.val, p, fields, dst(s)) })
}

// required makes a field's absence a problem, said as missing.
func required[S any](f field[S], missing string) field[S] {
	f.missing = missing
	return f
}

// keepNull makes a field's "no value" keep the default.
func keepNull[S any](f field[S]) field[S] {
	f.keepNull = true
	return f
}

func problemOf[T any](check func(T) string, v T) string {
	if check == nil {
		return ""
	}
	return check(v)
}
