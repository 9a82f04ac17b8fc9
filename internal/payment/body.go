package payment

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"

	"github.com/orderpaid/orderpaid/internal/platform/strictjson"
)

// DefaultPaymentMethod is the payment method of a request whose body is
// empty or leaves it out.
const DefaultPaymentMethod = "pm_card"

// maxPaymentMethodLength bounds payment_method.
const maxPaymentMethodLength = 64

// Body is the decoded body of POST /orders/{id}/payments. The amount and the
// currency are not in it: they come from the order, so a client cannot pay a
// different amount than the order's.
type Body struct {
	// PaymentMethod names the card or wallet to charge, such as "pm_card".
	// It is part of the request's fingerprint: paying with another card is
	// another request and needs another key. (The fake gateway has a single
	// payment method, so it is not sent on.)
	PaymentMethod string `json:"payment_method"`
}

// DecodeBody decodes a request body strictly: it must be empty (every field
// takes its default) or one JSON object with only known fields of the right
// type and nothing after it. Field names are matched exactly. Every error
// wraps ErrInvalidBody and names the field at fault.
//
// Strictness matters to idempotency: a misspelt field that was silently
// ignored would make two different intents share one fingerprint.
func DecodeBody(b []byte) (Body, error) {
	body := Body{PaymentMethod: DefaultPaymentMethod}
	trimmed := bytes.Trim(b, " \t\r\n")
	if len(trimmed) == 0 {
		return body, nil
	}
	if trimmed[0] != '{' {
		return Body{}, invalidBody("the body must be a JSON object")
	}
	// Names exactly as spelt, each once, valid UTF-8 and no NUL: a second
	// "payment_method" must not quietly win over the first.
	if err := strictjson.Decode(trimmed, &Body{}); err != nil {
		return Body{}, invalidBody("%v", err)
	}
	fields, err := decodeObject(trimmed)
	if err != nil {
		return Body{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		switch name {
		case "payment_method":
			pm, err := decodePaymentMethod(fields[name])
			if err != nil {
				return Body{}, err
			}
			body.PaymentMethod = pm
		default:
			return Body{}, invalidBody("unknown field %q", name)
		}
	}
	return body, nil
}

// decodeObject splits one JSON object into its raw fields and refuses
// anything after it.
func decodeObject(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, invalidBody("malformed JSON at byte %d: %v", syntax.Offset, err)
		}
		return nil, invalidBody("malformed JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalidBody("unexpected data after the JSON object")
	}
	return fields, nil
}

// decodePaymentMethod checks payment_method: a string shaped like "pm_card"
// (pm_ then letters, digits or underscores).
func decodePaymentMethod(raw json.RawMessage) (string, error) {
	var pm string
	if string(raw) == "null" || json.Unmarshal(raw, &pm) != nil {
		return "", invalidBody("payment_method: must be a string, got %.20s", raw)
	}
	rest, ok := bytes.CutPrefix([]byte(pm), []byte("pm_"))
	if !ok || len(rest) == 0 || len(pm) > maxPaymentMethodLength || !isWord(rest) {
		return "", invalidBody("payment_method: must be pm_ followed by letters, digits or underscores, at most %d characters, got %q",
			maxPaymentMethodLength, pm)
	}
	return pm, nil
}

// isWord reports whether b holds only ASCII letters, digits and underscores.
func isWord(b []byte) bool {
	for _, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// canonical is the body re-encoded from its decoded form: two requests that
// differ only in whitespace, field order or a spelt-out default encode the
// same, so they share a fingerprint.
func (b Body) canonical() []byte {
	out, _ := json.Marshal(b) // a struct of one string always encodes
	return out
}
