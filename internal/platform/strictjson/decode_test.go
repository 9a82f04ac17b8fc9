package strictjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/platform/strictjson"
)

type inner struct {
	OrderID     uuid.UUID `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
}

type outer struct {
	ID    string            `json:"id"`
	Data  inner             `json:"data"`
	Items []inner           `json:"items,omitempty"`
	Meta  map[string]string `json:"meta,omitempty"`
	Skip  string            `json:"-"`
}

const okOrder = `"7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10"`

func TestDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		field      string // the field the error names ("" for the body)
		reason     string // part of the error
	}{
		{name: "valid", body: `{"id":"evt_1","data":{"order_id":` + okOrder + `,"amount_cents":5}}`},
		{name: "valid surrogate pair", body: `{"id":"evt_\ud83d\ude00"}`},
		{name: "escaped backslash before u", body: `{"id":"evt_\\u0000"}`},
		{name: "map members are free", body: `{"meta":{"Any":"x","any":"y"}}`},
		{name: "case-variant member", body: `{"id":"a","ID":"b"}`, field: "ID", reason: "is unknown"},
		{name: "case-variant nested member", body: `{"data":{"Amount_Cents":7}}`, field: "data.Amount_Cents", reason: "is unknown"},
		{name: "member in an array element", body: `{"items":[{"amount_cents":1},{"x":1}]}`, field: "items[1].x", reason: "is unknown"},
		{name: "field tagged -", body: `{"Skip":"x"}`, field: "Skip", reason: "is unknown"},
		{name: "duplicate member", body: `{"id":"evt_ok3","id":"evt_other"}`, field: "id", reason: "more than once"},
		{name: "duplicate nested member", body: `{"data":{"amount_cents":100,"amount_cents":7}}`, field: "data.amount_cents", reason: "more than once"},
		{name: "duplicate map key", body: `{"meta":{"a":"1","a":"2"}}`, field: "meta.a", reason: "more than once"},
		{name: "NUL", body: `{"id":"evt_\u0000"}`, field: "id", reason: "NUL"},
		{name: "NUL in a map value", body: `{"meta":{"a":"\u0000"}}`, field: "meta.a", reason: "NUL"},
		{name: "raw invalid UTF-8", body: "{\"id\":\"evt_\xff\"}", field: "id", reason: "not valid UTF-8"},
		{name: "lone high surrogate", body: `{"id":"evt_\ud800"}`, field: "id", reason: "not valid UTF-8"},
		{name: "high surrogate then a letter", body: `{"id":"evt_\ud800\u0041"}`, field: "id", reason: "not valid UTF-8"},
		{name: "lone low surrogate", body: `{"id":"evt_\udc00"}`, field: "id", reason: "not valid UTF-8"},
		{name: "invalid UTF-8 in a name", body: "{\"i\xffd\":\"x\"}", reason: "a field name is not valid UTF-8"},
		{name: "NUL in a nested name", body: `{"data":{"a\u0000":1}}`, field: "data", reason: "has a field name that contains a NUL"},
		{name: "wrong type", body: `{"data":{"amount_cents":"100"}}`, field: "data.amount_cents", reason: "must be an integer"},
		{name: "object for a string", body: `{"id":{}}`, field: "id", reason: "must be a string"},
		{name: "bad UUID", body: `{"data":{"order_id":"x"}}`, field: "data.order_id", reason: "invalid value"},
		{name: "array", body: `[]`, reason: "must be a JSON object"},
		{name: "empty", body: ``, reason: "must be a JSON object"},
		{name: "trailing object", body: `{}{}`, reason: "unexpected data after"},
		{name: "truncated", body: `{"id":`, reason: "malformed JSON"},
		{name: "syntax error", body: `{"id" "x"}`, reason: "malformed JSON at byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var v outer
			err := strictjson.Decode([]byte(tc.body), &v)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Decode(%s) = %v, want no error", tc.body, err)
				}
				return
			}
			var e *strictjson.Error
			if !errors.As(err, &e) || e.Field != tc.field || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("Decode(%s) = %#v, want field %q and %q", tc.body, err, tc.field, tc.reason)
			}
		})
	}
}

// What encoding/json alone would have taken must not reach the value.
func TestDecodeLeavesNothingToTheLastMemberOrToCase(t *testing.T) {
	t.Parallel()
	var v outer
	if err := strictjson.Decode([]byte(`{"data":{"amount_cents":100,"Amount_Cents":7}}`), &v); err == nil {
		t.Fatalf("accepted a case variant, amount_cents = %d", v.Data.AmountCents)
	}
	var lenient outer
	if err := json.Unmarshal([]byte(`{"data":{"amount_cents":100,"Amount_Cents":7}}`), &lenient); err != nil || lenient.Data.AmountCents != 7 {
		t.Fatalf("encoding/json gave %d, %v: the test no longer shows the leniency it guards against", lenient.Data.AmountCents, err)
	}
}

// FuzzDecode: Decode never panics, refuses with an *Error only, and what it
// accepts is what encoding/json decodes too, from valid UTF-8 without NUL.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1","data":{"order_id":` + okOrder + `,"amount_cents":5}}`))
	f.Add([]byte(`{"id":"a","id":"b"}`))
	f.Add([]byte(`{"id":"\ud83d\ude00\\u0000"}`))
	f.Add([]byte(`{"items":[{"amount_cents":1}],"meta":{"k":"\ud800"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v outer
		err := strictjson.Decode(b, &v)
		if err != nil {
			var e *strictjson.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		var lenient outer
		if err := json.Unmarshal(b, &lenient); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", b, err)
		}
		if strings.ContainsRune(v.ID, 0) || strings.ContainsRune(v.ID, '\uFFFD') && !strings.Contains(string(b), "\uFFFD") && !strings.Contains(strings.ToLower(string(b)), `\ufffd`) {
			t.Fatalf("accepted id %q from %q", v.ID, b)
		}
	})
}
