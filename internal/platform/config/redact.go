package config

import "net/url"

// RedactURL returns raw with its password hidden, for a URL named in an
// error or a log line (DATABASE_URL, AMQP_URL, NATS_URL): the password of a
// connection URL must not reach a terminal or a log.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
