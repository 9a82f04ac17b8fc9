package retention_test

import (
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/ops/retention"
)

// The inbox window may not be shorter than the longest time a provider keeps
// retrying one webhook: 3 days (Stripe). An inbox row removed sooner lets a
// late retry through as a new event. The durations are written out here, not
// taken from MinInboxWindow, so lowering the constant fails this test instead
// of moving it along.
func TestInboxWindowIsAtLeastThreeDays(t *testing.T) {
	t.Parallel()
	if retention.MinInboxWindow != 72*time.Hour {
		t.Errorf("MinInboxWindow = %s, want 72h (a provider retries a webhook for up to 3 days)", retention.MinInboxWindow)
	}
	for _, w := range []time.Duration{24 * time.Hour, 25 * time.Hour, 48 * time.Hour, 72*time.Hour - time.Second} {
		if _, err := retention.NewCleaner(nil, retention.Config{InboxWindow: w}); err == nil {
			t.Errorf("NewCleaner accepted an inbox window of %s, want it refused (under 72h)", w)
		}
	}
	for _, w := range []time.Duration{72 * time.Hour, 7 * 24 * time.Hour} {
		if _, err := retention.NewCleaner(nil, retention.Config{InboxWindow: w}); err != nil {
			t.Errorf("NewCleaner refused an inbox window of %s: %v", w, err)
		}
	}
}
