package strictjson

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Error is a refused body: Field is the JSON path at fault ("data.order_id"),
// empty for the whole body; Reason says what is wrong, for a client to act on.
type Error struct{ Field, Reason string }

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("field %q %s", e.Field, e.Reason)
}

// Decode parses body, exactly one JSON object, into v, a pointer to a struct,
// refusing with an *Error naming the field: a member not among v's json names
// (any depth, case included) or given twice, invalid UTF-8 (raw or a lone \u
// surrogate) or NUL, a value its Go type cannot take (a malformed UUID), or
// anything after the object.
func Decode(body []byte, v any) error {
	w := &walker{dec: json.NewDecoder(bytes.NewReader(body)), body: body}
	w.dec.UseNumber()
	if tok, err := w.dec.Token(); err != nil || tok != json.Delim('{') {
		return &Error{Reason: "the body must be a JSON object"}
	}
	if err := w.object("", deref(reflect.TypeOf(v))); err != nil {
		return err
	}
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		return &Error{Reason: "unexpected data after the JSON object"}
	}
	// Only v's fields, exactly and once: encoding/json has nothing to guess.
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return &Error{Field: typeErr.Field, Reason: "must be " + describe(typeErr.Type)}
		}
		return &Error{Reason: "the body could not be decoded; send one JSON object"}
	}
	return nil
}

// walker checks one body's tokens against the type each is decoded into,
// and each string's raw bytes in body, which the token has cleaned up.
type walker struct {
	dec  *json.Decoder
	body []byte
}

// token reads the next token and checks its raw text; path names the value,
// or (name) the object whose member name is read.
func (w *walker) token(path string, name bool) (json.Token, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if _, ok := tok.(string); !ok {
		return tok, nil
	}
	// Between tokens are only separators and whitespace: the span is the string.
	switch reason := checkString(w.body[start:w.dec.InputOffset()]); {
	case reason == "":
		return tok, nil
	case !name:
		return nil, &Error{Field: path, Reason: reason}
	case path == "":
		return nil, &Error{Reason: "a field name " + reason}
	default:
		return nil, &Error{Field: path, Reason: "has a field name that " + reason}
	}
}

// value checks the value at path, decoded into t (nil: any JSON).
func (w *walker) value(path string, t reflect.Type) error {
	tok, err := w.token(path, false)
	if err != nil {
		return err
	}
	t = deref(t)
	switch s, isString := tok.(string); {
	case tok == json.Delim('{'):
		return w.object(path, t)
	case tok == json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(fmt.Sprintf("%s[%d]", path, i), elem); err != nil {
				return err
			}
		}
		_, err := w.token(path, false) // ']'
		return err
	case isString && t != nil && reflect.PointerTo(t).Implements(textUnmarshaler):
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return &Error{Field: path, Reason: fmt.Sprintf("has an invalid value (%v)", err)}
		}
	}
	return nil
}

// object checks the members of an object whose '{' was just read.
func (w *walker) object(path string, t reflect.Type) error {
	fields, seen := fieldsOf(t), map[string]bool{}
	for w.dec.More() {
		tok, err := w.token(path, true)
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		member := name
		if path != "" {
			member = path + "." + name
		}
		elem, known := fields[name]
		switch {
		case seen[name]:
			return &Error{Field: member, Reason: "appears more than once; send it once"}
		case fields != nil && !known:
			return &Error{Field: member, Reason: "is unknown (names are matched exactly, case included)"}
		case fields == nil && t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen[name] = true
		if err := w.value(member, elem); err != nil {
			return err
		}
	}
	_, err := w.token(path, false) // '}'
	return err
}

// checkString says what is wrong with a string token's raw text, if anything.
func checkString(raw []byte) string {
	if !utf8.Valid(raw) {
		return "is not valid UTF-8"
	}
	for i := 0; i < len(raw)-1; i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character: a second backslash is skipped with it
		if raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw, i+1)
		i += 4
		switch {
		case !ok:
			return "has a malformed \\u escape"
		case r == 0:
			return "contains a NUL character (\\u0000); remove it"
		case utf16.IsSurrogate(r):
			low, ok := rune(0), i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u'
			if ok {
				low, ok = hex4(raw, i+3)
			}
			if r >= 0xdc00 || !ok || utf16.DecodeRune(r, low) == utf8.RuneError {
				return "is not valid UTF-8 (a \\u escape of half a UTF-16 surrogate pair)"
			}
			i += 6
		}
	}
	return ""
}

// hex4 reads the 4 hex digits at raw[i:].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32)
	return rune(n), err == nil
}

func syntaxError(err error) error {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return &Error{Reason: fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, syntax)}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Reason: "malformed JSON: the body ends before the object does"}
	}
	return &Error{Reason: "malformed JSON"}
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// fieldsOf maps struct t's json names to their types as encoding/json sees
// them (embedded structs promoted); nil when t is not decoded member by member.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if t == nil || t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct:
			maps.Copy(fields, fieldsOf(deref(f.Type)))
		case name != "-" && f.IsExported():
			fields[cmp.Or(name, f.Name)] = f.Type
		}
	}
	return fields
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// describe names the JSON a Go type takes, without naming the Go type.
func describe(t reflect.Type) string {
	switch t = deref(t); {
	case reflect.PointerTo(t).Implements(textUnmarshaler) || t.Kind() == reflect.String:
		return "a string"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "an integer within range"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "an array"
	}
	return "an object"
}

// IsMediaType reports whether a Content-Type is application/json, with no
// charset other than UTF-8.
func IsMediaType(contentType string) bool {
	mediaType, params, err := mime.ParseMediaType(contentType)
	charset, ok := params["charset"]
	return err == nil && mediaType == "application/json" && (!ok || strings.EqualFold(charset, "utf-8"))
}
