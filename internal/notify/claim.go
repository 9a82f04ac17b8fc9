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

// ClaimLease is how long a claim is held before another delivery may take it
// over: longer than the client's timeout (10s), short as a crash holds the e-mail back.
const ClaimLease = 15 * time.Second

// Claimed is what Claim decided for one delivery about an order's e-mail.
type Claimed struct {
	// Key is the provider's Idempotency-Key for every call of this claim:
	// the first claiming delivery's, whatever message comes next.
	Key            string
	Sent           bool // the provider sent it already (NotificationID): nothing to do
	NotificationID string
	Unknown        bool // an earlier holder's call may have happened: ask first (SentFor)

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
//   - sending, lock expired or given back: this delivery takes it over, Unknown.
//
// Effect protected: the e-mail, against every repetition the inbox and the
// provider's key forgot (docs/techniques/ask-first.md); the row never expires.
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

// ClaimUnguarded is the mistake Claim prevents: no claim, and only memories
// that expire (the inbox, the provider's key) stop a late replay's second e-mail.
func ClaimUnguarded(_ context.Context, _ *queries.Queries, orderID uuid.UUID, template, key string) (Claimed, error) {
	return Claimed{Key: key, orderID: orderID, template: template}, nil
}

// Settle records that the provider sent the e-mail: nobody calls again.
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

// Release gives the claim back after a call that settled nothing, for the
// next delivery to take over at once; if it fails, the lease ends it later.
func (c Claimed) Release(ctx context.Context, q *queries.Queries) error {
	if c.holder == "" {
		return nil
	}
	return q.NotificationClaimRelease(ctx, queries.NotificationClaimReleaseParams{
		OrderID: c.orderID, Template: c.template, Holder: c.holder,
	})
}
