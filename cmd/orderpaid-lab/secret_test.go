package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The api refuses a webhook secret anyone knows outside a dev run: an empty
// WEBHOOK_SECRET and the documented dev secret would let anyone forge a
// payment.succeeded and mark any order paid. It logs which kind of secret it
// uses, never the value.
func TestAPIWebhookSecretRule(t *testing.T) {
	t.Parallel()
	_, dbURL := pgtest.NewDatabase(t)
	const real = "whsec_the_deployments_own_secret_0123456789"
	for _, tc := range []struct {
		name     string
		cmd      string
		env      map[string]string
		refused  string // part of the error; "" when the process must start
		wantKind string
	}{
		{"empty secret", "api", map[string]string{"WEBHOOK_SECRET": ""}, "WEBHOOK_SECRET is empty or not set", ""},
		{"the dev secret", "api", map[string]string{"WEBHOOK_SECRET": config.DevWebhookSecret}, "WEBHOOK_SECRET is the documented dev secret", ""},
		{"a secret of its own", "api", map[string]string{"WEBHOOK_SECRET": real}, "", config.SecretConfigured},
		{"the dev secret in a dev run", "api", map[string]string{"WEBHOOK_SECRET": "", config.DevVariable: "1"}, "", config.SecretDev},
		{"orderpaid-lab all is a dev run", "all", map[string]string{"WEBHOOK_SECRET": ""}, "", config.SecretDev},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{
				"DATABASE_URL": dbURL, "HTTP_ADDR": "127.0.0.1:0", "FAKES_ADDR": "127.0.0.1:0", config.DevVariable: "",
			}
			for k, v := range tc.env {
				env[k] = v
			}
			// A process that starts runs until the context ends.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			var out, logs syncBuffer
			err := run(ctx, []string{"orderpaid", tc.cmd}, func(k string) string { return env[k] }, &out, &logs)
			if tc.refused != "" {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), config.DevVariable) {
					t.Fatalf("err = %v, want a usage error (exit 2) containing %q and naming %s", err, tc.refused, config.DevVariable)
				}
				if strings.Contains(out.String(), "listening") {
					t.Fatalf("it listened before refusing:\n%s", out.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want it to start and stop cleanly; logs:\n%s", err, logs.String())
			}
			if !strings.Contains(logs.String(), `"kind":"`+tc.wantKind+`"`) {
				t.Errorf("no log line with the secret's kind %q:\n%s", tc.wantKind, logs.String())
			}
			if strings.Contains(logs.String(), config.DevWebhookSecret) || strings.Contains(logs.String(), real) {
				t.Errorf("the log shows the secret itself:\n%s", logs.String())
			}
		})
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}
