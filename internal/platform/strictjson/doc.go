// Package strictjson decodes the JSON bodies that clients and providers send,
// refusing what encoding/json would quietly accept.
//
// encoding/json is lenient in ways that turn bad input into a wrong answer
// instead of an error: it matches member names case-insensitively
// ({"Amount_Cents":7} sets amount_cents), keeps the last of two members with
// the same name ({"id":"evt_ok","id":"evt_other"} is evt_other), and replaces
// invalid UTF-8 with U+FFFD (two different raw ids become one id). For a
// service whose guards key effects on ids and amounts from the body, each of
// those is a way to apply an effect under the wrong key. Decode refuses them
// all, and a NUL character, which PostgreSQL text cannot store, with an error
// naming the field, so that the caller answers 400 before writing anything.
package strictjson
