// Package poison is the poison queue: where a message goes when it can never
// succeed (a malformed payload, an order that does not exist), with the
// reason, so it neither loops forever nor disappears.
//
// The queue is a table, not a broker topic, so it works the same with every
// broker and an operator can read it with SQL and replay it with
// `orderpaid reprocess --poison`.
package poison

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Topic is the name the router's PoisonQueue middleware publishes to.
const Topic = "poison"

// Store is a message.Publisher that writes poisoned messages to the
// poison_messages table. Watermill's PoisonQueue middleware publishes to it,
// then acks the original message.
type Store struct {
	q *queries.Queries
}

// NewStore returns a poison queue writing through q.
func NewStore(q *queries.Queries) *Store { return &Store{q: q} }

// Publish stores msgs with the reason, topic and handler the middleware set.
func (s *Store) Publish(_ string, msgs ...*message.Message) error {
	for _, m := range msgs {
		meta, err := json.Marshal(m.Metadata)
		if err != nil {
			return fmt.Errorf("encode poisoned message metadata: %w", err)
		}
		ctx := context.WithoutCancel(m.Context())
		err = s.q.PoisonInsert(ctx, queries.PoisonInsertParams{
			Topic:     m.Metadata.Get(middleware.PoisonedTopicKey),
			Handler:   m.Metadata.Get(middleware.PoisonedHandlerKey),
			MessageID: m.UUID,
			Payload:   m.Payload,
			Metadata:  meta,
			Reason:    m.Metadata.Get(middleware.ReasonForPoisonedKey),
		})
		if err != nil {
			return fmt.Errorf("store poisoned message %s: %w", m.UUID, err)
		}
	}
	return nil
}

// Close implements message.Publisher.
func (s *Store) Close() error { return nil }
