package strictjson

import (
	"mime"
	"strings"
)

// IsMediaType reports whether a Content-Type value declares JSON:
// application/json, with parameters such as charset=utf-8 allowed but no
// charset other than UTF-8 (JSON is UTF-8).
func IsMediaType(contentType string) bool {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "application/json" {
		return false
	}
	charset, ok := params["charset"]
	return !ok || strings.EqualFold(charset, "utf-8")
}
