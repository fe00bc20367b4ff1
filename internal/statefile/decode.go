package statefile

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeJSON decodes data, the content of file, into v (a non-nil pointer).
// It is strict where encoding/json is lenient, because a state file that
// decodes to something other than what it says must stop the tool:
//
//   - an empty file, a syntax error and trailing data are errors;
//   - an object key that is not a field of the target struct is an error, and
//     so is a key given twice;
//   - null is accepted only where the target is a pointer or an interface;
//   - a struct field tagged `json:"name,required"` must be present.
//
// Every error starts with FILE:LINE:COL (FILE:LINE for an unknown field),
// names the field path (`last_results.task_1`, `tasks[3]`) and never a Go
// type. All decoding problems are reported at once, joined with errors.Join;
// a syntax error stops parsing, so it is always alone.
func DecodeJSON(file string, data []byte, v any) error {
	return decodeJSON(&decoder{file: file, data: data}, v)
}

// DecodeGoJSON is DecodeJSON for a file that encoding/json writes, such as the
// loop's journal: there a nil slice or map is written as null, so null is
// accepted for them too (and decodes to nil), which keeps the file's bytes
// the same from one write to the next. Everything else is as strict.
func DecodeGoJSON(file string, data []byte, v any) error {
	return decodeJSON(&decoder{file: file, data: data, nilAsNull: true}, v)
}

func decodeJSON(d *decoder, v any) error {
	file, data := d.file, d.data
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("statefile.DecodeJSON: v must be a non-nil pointer")
	}
	if len(bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))) == 0 {
		what := expected(rv.Elem().Type()) // "an object" → "a JSON object"
		_, noun, _ := strings.Cut(what, " ")
		return fmt.Errorf("%s: file is empty (expected a JSON %s)", file, noun)
	}
	root, err := parse(data)
	if err != nil {
		var se *syntaxError
		errors.As(err, &se)
		line, col := position(data, se.off)
		return fmt.Errorf("%s:%d:%d: %s", file, line, col, se.msg)
	}
	d.decode(root, rv.Elem(), "")
	return errors.Join(d.errs...)
}

// Locate returns "FILE:LINE:COL" for the value found by following path from
// the root of data: object keys, or decimal indexes into arrays. When data
// does not parse or the path is absent it returns just FILE. Loaders use it to
// place the problems they find after decoding, such as a duplicate task id.
func Locate(file string, data []byte, path ...string) string {
	n, err := parse(data)
	if err != nil {
		return file
	}
	for _, step := range path {
		var next *node
		switch n.kind {
		case objectKind:
			for _, m := range n.members {
				if m.key == step {
					next = m.val
				}
			}
		case arrayKind:
			if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(n.elems) {
				next = n.elems[i]
			}
		}
		if next == nil {
			return file
		}
		n = next
	}
	line, col := position(data, n.off)
	return fmt.Sprintf("%s:%d:%d", file, line, col)
}

// FieldPath appends a key to a dotted field path as messages show it:
// simple keys after a dot, anything else quoted in brackets.
func FieldPath(path, key string) string {
	simple := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			simple = false
			break
		}
	}
	switch {
	case !simple:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	default:
		return path + "." + key
	}
}

type decoder struct {
	file string
	data []byte
	errs []error
	// orNull is set while decoding the target of a pointer, so a mismatch
	// can say that null would have done too.
	orNull bool
	// nilAsNull accepts null for a slice or map (DecodeGoJSON).
	nilAsNull bool
}

func (d *decoder) errorf(off int, path, format string, args ...any) {
	line, col := position(d.data, off)
	prefix := fmt.Sprintf("%s:%d:%d: ", d.file, line, col)
	if path != "" {
		prefix += path + ": "
	}
	d.errs = append(d.errs, errors.New(prefix+fmt.Sprintf(format, args...)))
}

// expected says, for a message, what JSON a Go type accepts.
func expected(t reflect.Type) string {
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return expected(t.Elem()) + " or null"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "any value"
}

// found describes a JSON value for a message, quoting short scalars.
func found(n *node) string {
	switch n.kind {
	case nullKind:
		return "value is null"
	case boolKind:
		return strconv.FormatBool(n.b) + " is a boolean"
	case numberKind:
		return clip(n.text) + " is a number"
	case stringKind:
		return strconv.Quote(clip(n.text)) + " is a string"
	case arrayKind:
		return "value is an array"
	}
	return "value is an object"
}

func clip(s string) string { return Clip(s, 40) }

// Clip cuts s to at most limit bytes, whole UTF-8 sequences, with "..." when
// cut: a value quoted in a state file's message stays one short line.
func Clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func (d *decoder) mismatch(n *node, v reflect.Value, path string, orNull bool) {
	want := expected(v.Type())
	if k := v.Kind(); orNull || d.nilAsNull && (k == reflect.Slice || k == reflect.Map) {
		want += " or null"
	}
	d.errorf(n.off, path, "%s (expected %s)", found(n), want)
}

// is reports whether n is a k, as v needs; if not, it records the mismatch.
func (d *decoder) is(n *node, k kind, v reflect.Value, path string, orNull bool) bool {
	if n.kind != k {
		d.mismatch(n, v, path, orNull)
		return false
	}
	return true
}

// nullAsNil sets v, a map or slice, to nil for a null when nilAsNull accepts one.
func (d *decoder) nullAsNil(n *node, v reflect.Value) bool {
	if n.kind != nullKind || !d.nilAsNull {
		return false
	}
	v.SetZero()
	return true
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

func (d *decoder) decode(n *node, v reflect.Value, path string) {
	orNull := d.orNull
	d.orNull = false
	if v.Kind() != reflect.Pointer && v.CanAddr() && v.Addr().Type().Implements(textUnmarshalerType) {
		if !d.is(n, stringKind, v, path, orNull) {
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.text)); err != nil {
			d.errorf(n.off, path, "%q is not valid: %v", clip(n.text), err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.kind == nullKind {
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.orNull = true
		d.decode(n, v.Elem(), path)
	case reflect.Interface:
		if v.NumMethod() != 0 {
			panic("statefile.DecodeJSON: cannot decode into a non-empty interface")
		}
		if g := d.generic(n, path); g == nil {
			v.SetZero()
		} else {
			v.Set(reflect.ValueOf(g))
		}
	case reflect.Struct:
		d.decodeStruct(n, v, path, orNull)
	case reflect.Map:
		if d.nullAsNil(n, v) || !d.is(n, objectKind, v, path, orNull) {
			return
		}
		if v.Type().Key().Kind() != reflect.String {
			panic("statefile.DecodeJSON: map keys must be strings")
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(v.Type(), len(n.members)))
		}
		for m := range d.members(n, path) {
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decode(m.val, elem, FieldPath(path, m.key))
			v.SetMapIndex(reflect.ValueOf(m.key).Convert(v.Type().Key()), elem)
		}
	case reflect.Slice:
		if d.nullAsNil(n, v) || !d.is(n, arrayKind, v, path, orNull) {
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.elems), len(n.elems))
		for i, e := range n.elems {
			d.decode(e, s.Index(i), path+"["+strconv.Itoa(i)+"]")
		}
		v.Set(s)
	case reflect.String:
		if !d.is(n, stringKind, v, path, orNull) {
			return
		}
		v.SetString(n.text)
	case reflect.Bool:
		if !d.is(n, boolKind, v, path, orNull) {
			return
		}
		v.SetBool(n.b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		if !d.is(n, numberKind, v, path, orNull) {
			return
		}
		if err := setNumber(v, n.text); err != nil {
			d.numberError(n, v, path, err)
		}
	default:
		panic("statefile.DecodeJSON: unsupported target kind " + v.Kind().String())
	}
}

// setNumber stores the JSON number text in v, an integer or float of any size;
// v is left as it was when text does not fit.
func setNumber(v reflect.Value, text string) error {
	bits := v.Type().Bits()
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(text, bits)
		if err == nil {
			v.SetFloat(f)
		}
		return err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u, err := strconv.ParseUint(text, 10, bits)
		if err == nil {
			v.SetUint(u)
		}
		return err
	}
	i, err := strconv.ParseInt(text, 10, bits)
	if err == nil {
		v.SetInt(i)
	}
	return err
}

func (d *decoder) numberError(n *node, v reflect.Value, path string, err error) {
	if errors.Is(err, strconv.ErrRange) {
		d.errorf(n.off, path, "%s is out of range (expected %s)", clip(n.text), expected(v.Type()))
		return
	}
	d.errorf(n.off, path, "%s is not a whole number (expected %s)", clip(n.text), expected(v.Type()))
}

type field struct {
	name      string
	index     int
	required  bool // `required`, this package's option: the key must be present
	omitempty bool
}

// fields lists the JSON fields of a struct type as encoding/json would
// name them, with their options (`required` is this package's own); the
// decoder and the encoder both read struct tags through it.
func fields(t reflect.Type) []field {
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, index: i}
		for _, o := range strings.Split(opts, ",") {
			f.required = f.required || o == "required"
			f.omitempty = f.omitempty || o == "omitempty"
		}
		fs = append(fs, f)
	}
	return fs
}

// members yields the members of the object n in order, a repeated key reported
// as a problem where it stands and skipped.
func (d *decoder) members(n *node, path string) iter.Seq[member] {
	return func(yield func(member) bool) {
		seen := make(map[string]bool, len(n.members))
		for _, m := range n.members {
			if seen[m.key] {
				d.errorf(m.off, path, "duplicate key %q", clip(m.key))
				continue
			}
			seen[m.key] = true
			if !yield(m) {
				return
			}
		}
	}
}

func (d *decoder) decodeStruct(n *node, v reflect.Value, path string, orNull bool) {
	if !d.is(n, objectKind, v, path, orNull) {
		return
	}
	fs := fields(v.Type())
	seen := make(map[string]bool, len(n.members))
	for m := range d.members(n, path) {
		seen[m.key] = true
		var f *field
		for i := range fs {
			if fs[i].name == m.key {
				f = &fs[i]
			}
		}
		if f == nil {
			line, _ := position(d.data, m.off)
			d.errs = append(d.errs, fmt.Errorf("%s:%d: unknown field %q (expected %s)", d.file, line, clip(FieldPath(path, m.key)), names(fs)))
			continue
		}
		d.decode(m.val, v.Field(f.index), FieldPath(path, m.key))
	}
	for _, f := range fs {
		if f.required && !seen[f.name] {
			d.errorf(n.off, path, "missing field %q (expected a %q key holding %s)", f.name, f.name, expected(v.Field(f.index).Type()))
		}
	}
}

// names lists field names for an "expected one of" hint.
func names(fs []field) string {
	switch len(fs) {
	case 0:
		return "no fields"
	case 1:
		return "only " + strconv.Quote(fs[0].name)
	}
	var b strings.Builder
	b.WriteString("one of ")
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(f.name))
	}
	return b.String()
}

// generic converts a node for an `any` target the way encoding/json does,
// except that a number too large for a float64 is an error, not infinity.
func (d *decoder) generic(n *node, path string) any {
	switch n.kind {
	case boolKind:
		return n.b
	case numberKind:
		f, err := strconv.ParseFloat(n.text, 64)
		if err != nil {
			d.errorf(n.off, path, "%s is out of range (expected a number)", clip(n.text))
		}
		return f
	case stringKind:
		return n.text
	case arrayKind:
		s := make([]any, len(n.elems))
		for i, e := range n.elems {
			s[i] = d.generic(e, path+"["+strconv.Itoa(i)+"]")
		}
		return s
	case objectKind:
		m := make(map[string]any, len(n.members))
		for _, mb := range n.members {
			m[mb.key] = d.generic(mb.val, FieldPath(path, mb.key))
		}
		return m
	}
	return nil
}
