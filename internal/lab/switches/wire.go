package switches

import (
	"reflect"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/inbox"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/stock"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// The mistakes, by guard: what each puts in its guard's place in a story
// part's Guards. Each is the Mistake of its guard's rows in
// effect.Protections (wire_test.go holds them to it).

func consumerMistakes(direct message.Publisher) map[string]func(*consumer.Guards) {
	return map[string]func(*consumer.Guards){
		effect.GuardStateCheck: func(g *consumer.Guards) {
			g.MarkPaid, g.MarkRefunded = order.MarkPaidUnguarded, order.MarkRefundedUnguarded
		},
		effect.GuardStockReservation: func(g *consumer.Guards) {
			g.ReserveStock, g.ReleaseStock = stock.ReserveUnguarded, stock.ReleaseUnguarded
		},
		effect.GuardLedgerKey: func(g *consumer.Guards) {
			g.ReleaseCommission, g.ReverseCommission = ledger.ReleaseCommissionUnguarded, ledger.ReverseCommissionUnguarded
		},
		effect.GuardOutbox:            func(g *consumer.Guards) { g.Enqueue = outbox.PublishAfterCommit(direct) },
		effect.GuardInbox:             func(g *consumer.Guards) { g.InboxSeen = inbox.SeenUnguarded },
		effect.GuardProviderKey:       func(g *consumer.Guards) { g.ProviderKey = notify.FreshKey },
		effect.GuardNotificationClaim: func(g *consumer.Guards) { g.ClaimNotice = notify.ClaimUnguarded },
	}
}

var paymentMistakes = map[string]func(*payment.Guards){
	effect.GuardIdempotencyKey: func(g *payment.Guards) { g.Pay = payment.PayWithoutKey },
	effect.GuardChargeClaim:    func(g *payment.Guards) { g.ClaimCharge = payment.NoChargeClaim },
	effect.GuardAskFirst:       func(g *payment.Guards) { g.AskFirst = payment.SendBlind },
}

var webhookMistakes = map[string]func(*webhook.Guards){
	effect.GuardWebhookInbox: func(g *webhook.Guards) { g.RecordEvent = webhook.RecordEventUnguarded },
	effect.GuardChargeRecord: func(g *webhook.Guards) { g.RecordCharge = webhook.RecordChargeUnguarded },
}

// Consumers returns c with the mistakes of s wired (nil s: c itself).
// direct is the broker the outbox's mistake publishes to. Wire the
// per-message handlers with HoldAfterCommit and the batch handlers with
// Batches too: the outbox's mistake and batch mode need them.
func Consumers(c *consumer.Consumers, s *Set, direct message.Publisher) *consumer.Consumers {
	if s == nil {
		return c
	}
	return c.WithGuards(wire(s, c.Guards(), consumerMistakes(direct)))
}

// Payments returns p with the mistakes of s wired (nil s: p itself).
func Payments(p *payment.Service, s *Set) *payment.Service {
	if s == nil {
		return p
	}
	return p.WithGuards(wire(s, p.Guards(), paymentMistakes))
}

// Ingestor returns in with the mistakes of s wired (nil s: in itself).
func Ingestor(in *webhook.Ingestor, s *Set) *webhook.Ingestor {
	if s == nil {
		return in
	}
	return in.WithGuards(wire(s, in.Guards(), webhookMistakes))
}

// consumerGuards are the guards whose mistakes Consumers wires.
func consumerGuards() []string {
	var names []string
	for name := range consumerMistakes(nil) {
		names = append(names, name)
	}
	return names
}

// wire returns guards with, for every guard mistakes name, the fields its
// mistake sets: set to the mistake when s has the guard off from the start
// and cannot switch, and, when s is live, to a function that calls, at
// each call, the mistake while s has the guard off and the guard
// otherwise.
func wire[G any](s *Set, guards G, mistakes map[string]func(*G)) G {
	out := guards
	for name, mistake := range mistakes {
		wrong := guards
		mistake(&wrong)
		if !s.CanSwitch() {
			if s.Off(name) {
				mistake(&out)
			}
			continue
		}
		right, bad, to := reflect.ValueOf(guards), reflect.ValueOf(wrong), reflect.ValueOf(&out).Elem()
		for i := range right.NumField() {
			guard, mistaken := right.Field(i), bad.Field(i)
			if guard.Pointer() == mistaken.Pointer() {
				continue // not this guard's field
			}
			to.Field(i).Set(reflect.MakeFunc(guard.Type(), func(args []reflect.Value) []reflect.Value {
				call := guard
				if s.Off(name) {
					call = mistaken
				}
				if call.Type().IsVariadic() {
					return call.CallSlice(args)
				}
				return call.Call(args)
			}))
		}
	}
	return out
}
