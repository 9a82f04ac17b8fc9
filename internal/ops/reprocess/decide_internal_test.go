package reprocess

import (
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/messages"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	const window = 7 * 24 * time.Hour
	tests := []struct {
		name  string
		topic string
		age   time.Duration
		force bool
		want  Action
	}{
		{"young order_paid", messages.TopicOrderPaid, time.Hour, false, Replay},
		{"young order_confirmed", messages.TopicOrderConfirmed, time.Hour, false, Replay},
		{"old order_paid: guarded by rows that never expire", messages.TopicOrderPaid, window + time.Hour, false, ReplayPastWindow},
		{"old order_confirmed: the e-mail could go twice", messages.TopicOrderConfirmed, window + time.Hour, false, Refused},
		{"old order_confirmed, forced", messages.TopicOrderConfirmed, window + time.Hour, true, Forced},
		{"exactly the window", messages.TopicOrderConfirmed, window, false, Replay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := decide(Item{Topic: tt.topic, Age: tt.age}, Options{Window: window, Force: tt.force})
			if got.Action != tt.want {
				t.Errorf("action = %q, want %q", got.Action, tt.want)
			}
		})
	}
}
