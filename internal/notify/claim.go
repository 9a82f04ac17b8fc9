package notify

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// ClaimLease is how long a claim is held before another delivery may take
// it over as abandoned: longer than the provider client's timeout (10s,
// NewClient), so a live holder is never taken over mid-call, and short, as
// a worker killed mid-call holds its e-mail back that long.
const ClaimLease = 15 * time.Second

// Claimed is what Claim decided for one delivery about the order's e-mail
// of a template.
type Claimed struct {
	// Key is the provider's Idempotency-Key for every call of this claim:
	// the key of the first delivery that claimed it, whatever message comes
	// next.
	Key string
	// Sent: the provider sent it already (NotificationID); nothing to do.
	Sent           bool
	NotificationID string
	// Unknown: an earlier holder may have called the provider and its
	// outcome is unknown; ask the provider before sending (SentFor).
	Unknown bool

	orderID  uuid.UUID
	template string
	holder   string // "" for the mistake's claims: nothing to settle
}

// Claim takes the order's e-mail of template before the provider is called:
// one e-mail per order and template, whatever the message that asks for it.
//
//   - no claim yet: this delivery claims it, under key;
//   - sent: Sent, nothing to do;
//   - sending, locked: another delivery is calling now: *NotNowError, retry;
//   - sending, lock expired (its holder crashed, or got no answer and gave
//     it back): this delivery takes it over, Unknown.
//
// Effect protected: the e-mail, against every repetition the inbox and the
// provider's key no longer remember (docs/techniques/ask-first.md). The row
// is never cleaned, so its answer does not expire.
func Claim(ctx context.Context, q *queries.Queries, orderID uuid.UUID, template, key string) (Claimed, error) {
	c := Claimed{Key: key, orderID: orderID, template: template, holder: uuid.NewString()}
	lease := ClaimLease.Milliseconds()
	n, err := q.NotificationClaimInsert(ctx, queries.NotificationClaimInsertParams{
		OrderID: orderID, Template: template, ProviderKey: key, Holder: c.holder, LeaseMs: lease,
	})
	if err != nil {
		return Claimed{}, fmt.Errorf("claim the %s e-mail of order %s: %w", template, orderID, err)
	}
	if n == 1 {
		return c, nil
	}
	row, err := q.NotificationClaimGet(ctx, queries.NotificationClaimGetParams{OrderID: orderID, Template: template})
	if err != nil {
		return Claimed{}, fmt.Errorf("read the %s e-mail claim of order %s: %w", template, orderID, err)
	}
	c.Key = row.ProviderKey
	switch {
	case row.State == "sent":
		c.Sent, c.NotificationID = true, row.NotificationID.String
		return c, nil
	case row.Held:
		return Claimed{}, claimHeld(time.Duration(row.LockLeftMs) * time.Millisecond)
	}
	won, err := q.NotificationClaimTakeOver(ctx, queries.NotificationClaimTakeOverParams{
		OrderID: orderID, Template: template, Holder: c.holder, LeaseMs: lease,
	})
	if err != nil {
		return Claimed{}, fmt.Errorf("take over the %s e-mail claim of order %s: %w", template, orderID, err)
	}
	if won == 0 {
		return Claimed{}, claimHeld(ClaimLease)
	}
	c.Unknown = true
	return c, nil
}

// claimHeld is the "not now" of a claim another delivery holds for left.
func claimHeld(left time.Duration) *NotNowError {
	return &NotNowError{Status: http.StatusConflict, RetryAfter: min(max(left, time.Second), MaxRetryAfter)}
}

// ClaimUnguarded is the mistake Claim prevents: no claim, every delivery
// calls the provider, and only the inbox and the provider's key (memories
// that expire) stand between a late replay and a second e-mail.
func ClaimUnguarded(_ context.Context, _ *queries.Queries, orderID uuid.UUID, template, key string) (Claimed, error) {
	return Claimed{Key: key, orderID: orderID, template: template}, nil
}

// Settle records that the provider sent the claim's e-mail: nobody calls
// again.
func (c Claimed) Settle(ctx context.Context, q *queries.Queries, notificationID string) error {
	if c.holder == "" {
		return nil
	}
	err := q.NotificationClaimSettle(ctx, queries.NotificationClaimSettleParams{
		OrderID: c.orderID, Template: c.template, NotificationID: pgtype.Text{String: notificationID, Valid: notificationID != ""},
	})
	if err != nil {
		return fmt.Errorf("settle the %s e-mail claim of order %s: %w", c.template, c.orderID, err)
	}
	return nil
}

// Release gives the claim back after a call that settled nothing, so the
// next delivery takes it over at once and asks the provider first. If it
// fails, the claim stays locked until its lease ends: slower, never unsafe.
func (c Claimed) Release(ctx context.Context, q *queries.Queries) error {
	if c.holder == "" {
		return nil
	}
	return q.NotificationClaimRelease(ctx, queries.NotificationClaimReleaseParams{
		OrderID: c.orderID, Template: c.template, Holder: c.holder,
	})
}
