package payment

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/google/uuid"
)

// fingerprint identifies the request a key was first used for: the SHA-256
// of its method, path and canonical body.
//
// Failure it prevents: a client bug that reuses a key for another request
// (another order, another card). Without the fingerprint that request would
// silently get the first one's stored response ("charged") although nothing
// it asked for happened; with it, the request is refused with
// ErrKeyMismatch (422).
//
// The body is decoded and re-encoded first (Body.canonical), so a retry that
// only changes whitespace or field order still matches.
func fingerprint(orderID uuid.UUID, body Body) string {
	h := sha256.New()
	h.Write([]byte("POST /orders/" + orderID.String() + "/payments\n"))
	h.Write(body.canonical())
	return hex.EncodeToString(h.Sum(nil))
}
