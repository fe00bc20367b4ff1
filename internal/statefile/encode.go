package statefile

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// EncodePython returns the bytes Python's json.dump(v, f, indent=2) writes —
// no trailing newline — so the files auto-harness also writes (suite.json,
// train_results.json) are byte-compatible with it:
//
//   - two-space indentation, `"key": value`, `[]` and `{}` for empty containers;
//   - struct fields in declaration order (as a Python dict keeps insertion
//     order), map keys sorted;
//   - floats as Python's repr writes them: 1.0, 0.8, 1e-05, 1e+16;
//   - strings ASCII-only, escaped with lower-case \uXXXX (ensure_ascii);
//   - nil pointers and interfaces as null, nil slices as [] and nil maps as {}.
//
// NaN and infinities are an error: Python would write NaN, which is not JSON.
// Struct tags follow encoding/json: a name, "-" to skip, and omitempty.
func EncodePython(v any) ([]byte, error) {
	e := &encoder{}
	if err := e.value(reflect.ValueOf(v), 0, ""); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// EncodeJSON is EncodePython followed by a newline: hgate's own files
// (receipts, split.json), which auto-harness does not have, end in one as
// text files do.
func EncodeJSON(v any) ([]byte, error) {
	b, err := EncodePython(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

type encoder struct{ buf []byte }

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func (e *encoder) newline(depth int) {
	e.buf = append(e.buf, '\n')
	for range depth {
		e.buf = append(e.buf, "  "...)
	}
}

func (e *encoder) value(v reflect.Value, depth int, path string) error {
	if !v.IsValid() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	switch {
	case v.Type().Implements(jsonMarshalerType):
		raw, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		// Re-indent the foreign output so it nests like the rest.
		var out bytes.Buffer
		if err := json.Indent(&out, raw, strings.Repeat("  ", depth), "  "); err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		e.buf = append(e.buf, out.Bytes()...)
		return nil
	case v.Type().Implements(textMarshalerType):
		text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		e.str(string(text))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return e.value(v.Elem(), depth, path)
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		s, err := PythonFloat(v.Float(), v.Type().Bits())
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		e.buf = append(e.buf, s...)
	case reflect.String:
		e.str(v.String())
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			e.buf = append(e.buf, "[]"...)
			return nil
		}
		e.buf = append(e.buf, '[')
		for i := range v.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.newline(depth + 1)
			if err := e.value(v.Index(i), depth+1, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		e.newline(depth)
		e.buf = append(e.buf, ']')
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return fmt.Errorf("encode %s: map keys must be strings", path)
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		if len(keys) == 0 {
			e.buf = append(e.buf, "{}"...)
			return nil
		}
		for i, k := range keys {
			if err := e.member(i, k.String(), v.MapIndex(k), depth, path); err != nil {
				return err
			}
		}
		e.newline(depth)
		e.buf = append(e.buf, '}')
	case reflect.Struct:
		n := 0
		for _, f := range encFields(v) {
			if err := e.member(n, f.name, f.v, depth, path); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			e.buf = append(e.buf, "{}"...)
			return nil
		}
		e.newline(depth)
		e.buf = append(e.buf, '}')
	default:
		return fmt.Errorf("encode %s: cannot write a %s as JSON", path, v.Kind())
	}
	return nil
}

func (e *encoder) member(i int, key string, v reflect.Value, depth int, path string) error {
	if i == 0 {
		e.buf = append(e.buf, '{')
	} else {
		e.buf = append(e.buf, ',')
	}
	e.newline(depth + 1)
	e.str(key)
	e.buf = append(e.buf, ": "...)
	return e.value(v, depth+1, FieldPath(path, key))
}

type encField struct {
	name string
	v    reflect.Value
}

func encFields(v reflect.Value) []encField {
	var out []encField
	for _, f := range fields(v.Type()) {
		fv := v.Field(f.index)
		if f.omitempty && isEmpty(fv) {
			continue
		}
		out = append(out, encField{f.name, fv})
	}
	return out
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return v.Len() == 0
	}
	return v.IsZero()
}

// str writes s as Python's json does with ensure_ascii: printable ASCII as
// is, the usual short escapes, everything else as \uXXXX (lower-case hex,
// surrogate pairs beyond the BMP). Invalid UTF-8 becomes U+FFFD.
func (e *encoder) str(s string) {
	e.buf = append(e.buf, '"')
	for _, r := range s {
		switch r {
		case '"':
			e.buf = append(e.buf, `\"`...)
		case '\\':
			e.buf = append(e.buf, `\\`...)
		case '\n':
			e.buf = append(e.buf, `\n`...)
		case '\r':
			e.buf = append(e.buf, `\r`...)
		case '\t':
			e.buf = append(e.buf, `\t`...)
		case '\b':
			e.buf = append(e.buf, `\b`...)
		case '\f':
			e.buf = append(e.buf, `\f`...)
		default:
			switch {
			case r >= 0x20 && r <= 0x7e:
				e.buf = append(e.buf, byte(r))
			case r > 0xffff:
				hi, lo := utf16.EncodeRune(r)
				e.buf = fmt.Appendf(e.buf, `\u%04x\u%04x`, hi, lo)
			default:
				e.buf = fmt.Appendf(e.buf, `\u%04x`, r)
			}
		}
	}
	e.buf = append(e.buf, '"')
}

// PythonFloat formats f as Python's repr (and so json.dump) does: the
// shortest digits that read back to the same value, with ".0" on whole
// numbers, and exponent notation (e-05, e+16) when the decimal point would
// sit more than 16 places right or 4 places left of the first digit.
// bits is 64 for float64, 32 for float32.
func PythonFloat(f float64, bits int) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%v cannot be written as JSON (expected a finite number)", f)
	}
	sci := strconv.FormatFloat(f, 'e', -1, bits)
	_, exp, _ := strings.Cut(sci, "e")
	x, _ := strconv.Atoi(exp)
	// Python's float_repr_style "short": decpt is x+1; exponent notation
	// when decpt <= -4 or decpt > 16. Go's 'e' format already matches
	// Python's mantissa and two-digit signed exponent.
	if decpt := x + 1; decpt <= -4 || decpt > 16 {
		return sci, nil
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s, nil
}
