package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// The gauges an operator watches, read from the database at each collection
// (each Prometheus scrape) rather than recorded by the flow: the outbox
// backlog, the poison queue, the logical relay's slot.

// ObserveSlot registers the gauges of the logical relay's slot
// (OUTBOX_RELAY=logical), read at each collection: the WAL it keeps on the
// server and the WAL its reader has not confirmed, in bytes. A relay that
// stops shows as both growing with every write to the database; alert on
// the first before the disk (or max_slot_wal_keep_size) does.
func ObserveSlot(mp metric.MeterProvider, lag func(context.Context) (retained, unconfirmed int64, ok bool, err error)) error {
	m := mp.Meter(meterName)
	retained, err := m.Int64ObservableGauge(MetricSlotRetained, metric.WithUnit("By"),
		metric.WithDescription("WAL the outbox's replication slot keeps on the server, since its restart position."))
	if err != nil {
		return fmt.Errorf("create %s: %w", MetricSlotRetained, err)
	}
	unconfirmed, err := m.Int64ObservableGauge(MetricSlotUnconfirmed, metric.WithUnit("By"),
		metric.WithDescription("WAL written since the outbox's replication slot last confirmed a position."))
	if err != nil {
		return fmt.Errorf("create %s: %w", MetricSlotUnconfirmed, err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if r, u, ok, err := lag(ctx); err == nil && ok {
			o.ObserveInt64(retained, r)
			o.ObserveInt64(unconfirmed, u)
		}
		return nil
	}, retained, unconfirmed)
	if err != nil {
		return fmt.Errorf("register slot gauges: %w", err)
	}
	return nil
}

// ObserveQueues registers the two gauges read from the database at each
// collection (each Prometheus scrape): the outbox backlog and the poison
// queue's pending messages (a nil outboxBacklog: not observed, the relay reads
// a slot). A failed query skips that observation: a missing
// sample says "unknown", and /readyz reports the database.
func ObserveQueues(mp metric.MeterProvider, outboxBacklog, poisonPending func(context.Context) (int64, error)) error {
	m := mp.Meter(meterName)
	backlog, err := m.Int64ObservableGauge(MetricOutboxBacklog, metric.WithUnit("{message}"),
		metric.WithDescription("Outbox rows written but not yet relayed to the broker."))
	if err != nil {
		return fmt.Errorf("create %s: %w", MetricOutboxBacklog, err)
	}
	poison, err := m.Int64ObservableGauge(MetricPoisonPending, metric.WithUnit("{message}"),
		metric.WithDescription("Messages in the poison queue not yet reprocessed."))
	if err != nil {
		return fmt.Errorf("create %s: %w", MetricPoisonPending, err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if outboxBacklog != nil {
			if n, err := outboxBacklog(ctx); err == nil {
				o.ObserveInt64(backlog, n)
			}
		}
		if n, err := poisonPending(ctx); err == nil {
			o.ObserveInt64(poison, n)
		}
		return nil
	}, backlog, poison)
	if err != nil {
		return fmt.Errorf("register queue gauges: %w", err)
	}
	return nil
}
