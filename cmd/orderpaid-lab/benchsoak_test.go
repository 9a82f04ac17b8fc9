package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// bench and soak refuse bad values before starting anything, with a usage
// error (exit 2) naming the flag.
func TestBenchAndSoakCommandLine(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--broker", "sqs"}, `--broker "sqs": want postgres, amqp, nats or kafka`},
		{[]string{"bench", "--runs", "sideways"}, `unknown run "sideways"`},
		{[]string{"bench", "--orders", "0"}, "must be positive"},
		{[]string{"bench", "--relay", "cdc"}, `--relay "cdc": want poll or logical`},
		{[]string{"soak", "--relay", "cdc"}, `soak: --relay "cdc": want poll or logical`},
		{[]string{"soak", "--broker", "sqs"}, `--broker "sqs": want nats, postgres, amqp or kafka`},
		{[]string{"soak", "--reconcile", "--broker", "sqs"}, `--broker "sqs"`},
		{[]string{"soak", "--duplicates", "1.5"}, "--duplicates 1.5"},
		{[]string{"soak", "--kill-every", "0s"}, "--kill-every"},
		{[]string{"soak", "--restart-rabbitmq"}, "needs --broker amqp"},
		{[]string{"soak", "--without", "seatbelt"}, `unknown guard "seatbelt"`},
		{[]string{"soak", "--batch", "10", "--position", "with-effects"}, "needs BROKER=postgres"},
		{[]string{"soak", "--broker", "postgres", "--position", "with-effects"}, "needs CONSUMER_BATCH_SIZE above 1"},
		{[]string{"soak", "--grace", "2s"}, "--grace: only with --reconcile"},
		{[]string{"soak", "--reconcile", "--duplicates", "0.5"}, "--duplicates does not apply with --reconcile"},
		{[]string{"soak", "--reconcile", "--without", "inbox"}, "--without does not apply with --reconcile"},
		{[]string{"soak", "--reconcile", "--drop-webhooks", "1"}, "--drop-webhooks 1"},
		{[]string{"soak", "--reconcile", "--gateway-delay", "0s"}, "--gateway-delay must be positive"},
	} {
		err := run(context.Background(), append([]string{"orderpaid"}, tt.args...), getenv, &strings.Builder{}, &strings.Builder{})
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want a usage error containing %q", tt.args, err, tt.want)
		}
	}
}
