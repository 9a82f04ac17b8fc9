package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// FaultBeforeConfirm fires in the logical relay after a transaction's rows
// were published and the broker confirmed them, before the slot is told:
// a relay killed there publishes them again when it comes back (the
// scenario cdc-relay-restart).
const FaultBeforeConfirm = "outbox.logical.before_confirm"

// LogicalRelay is the relay of OUTBOX_RELAY=logical: it reads the outbox's
// inserts from PostgreSQL's write-ahead log, through a logical replication
// slot (Slot), instead of polling the table. The rows arrive in commit
// order, a transaction at a time; the relay publishes a transaction's rows
// (its envelopes, as BatchRelay does) and only then confirms the
// transaction's end to the slot. So:
//
//   - a relay killed anywhere re-reads from the last confirmed position:
//     what it published and had not confirmed is published again (the
//     consumers' guards absorb it), and nothing is ever skipped;
//   - a broker that fails a publish is the same: the relay drops its
//     connection and reads the transaction again from the slot.
//
// A slot has one reader at a time: several relays may run, one streams,
// the others find the slot active and ask again every Wait (so a second
// worker is a standby, not a second reader).
//
// What it costs: the slot holds back the WAL it has not confirmed. A relay
// that stops (or a slot nobody reads) makes the server keep every WAL
// segment written since, for every table: see SlotLag, TidySlots (a slot
// left with no reader) and the scenario cdc-slot-stalled, and
// max_slot_wal_keep_size, the cap.
type LogicalRelay struct {
	envelopes
	pool   *pgxpool.Pool
	faults *fault.Set
	tracer trace.Tracer
	// Wait is how long a relay that finds the slot held by another waits
	// before it asks again, and the first wait after a lost connection
	// (default 1s).
	Wait time.Duration
}

// NewLogicalRelay builds a logical relay reading the slot of pool's
// database and publishing to out, traced and measured as cfg says. Call
// EnsureSlot first (the worker does, at start).
func NewLogicalRelay(pool *pgxpool.Pool, out message.Publisher, logger *slog.Logger, cfg RelayConfig) *LogicalRelay {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return &LogicalRelay{envelopes: envelopes{out: newTracedPublisher(out, cfg), logger: logger}, pool: pool,
		tracer: tp.Tracer("github.com/orderpaid/orderpaid/internal/outbox")}
}

// WithFaults arms the relay's fault point (FaultBeforeConfirm).
func (r *LogicalRelay) WithFaults(faults *fault.Set) *LogicalRelay {
	r.faults = faults
	return r
}

// Run relays until ctx ends. A transaction in hand when ctx ends is
// published and confirmed first.
func (r *LogicalRelay) Run(ctx context.Context) error {
	wait := cmp.Or(r.Wait, time.Second)
	for ctx.Err() == nil {
		err := r.stream(ctx)
		switch {
		case ctx.Err() != nil:
		case isSlotActive(err):
			r.logger.InfoContext(ctx, "outbox logical relay: another relay holds the slot; standing by", "err", err)
		default:
			r.logger.WarnContext(ctx, "outbox logical relay: stopped; reading again from the slot's last confirmed position", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}

// statusEvery is how often the relay tells the slot where it is when
// nothing happens, well inside the server's wal_sender_timeout (60s).
const statusEvery = 10 * time.Second

// stream reads the slot until ctx ends or something fails: it starts at
// the slot's confirmed position, publishes each committed transaction's
// rows and confirms the transaction's end after the broker confirmed.
func (r *LogicalRelay) stream(ctx context.Context) error {
	conn, slot, err := replicationConn(ctx, r.pool)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// LSN 0: from the slot's confirmed position.
	err = pglogrepl.StartReplication(ctx, conn, slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + Publication + "'"},
	})
	if err != nil {
		return fmt.Errorf("start reading slot %s: %w", slot, err)
	}
	rd := &reading{conn: conn, slot: slot, nextStatus: time.Now().Add(statusEvery)}
	for {
		data, err := rd.receive(ctx)
		if err == nil && data != nil {
			err = r.take(ctx, rd, data)
		}
		if err != nil {
			return err
		}
	}
}

// take handles one message of the stream. A keepalive between two
// transactions confirms the server's position: everything it sent so far is
// published, and a slot over an idle outbox must not hold back the WAL of
// other tables. A transaction's commit publishes its rows, then confirms
// its end.
func (r *LogicalRelay) take(ctx context.Context, rd *reading, data []byte) error {
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return err
		}
		if !rd.d.inTx && ka.ServerWALEnd > rd.confirmed {
			rd.confirmed = ka.ServerWALEnd
		}
		if ka.ReplyRequested {
			rd.nextStatus = time.Time{}
		}
	case pglogrepl.XLogDataByteID:
		xld, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return err
		}
		rows, end, err := rd.d.decode(xld.WALData)
		if err != nil {
			return fmt.Errorf("read slot %s: %w", rd.slot, err)
		}
		if end == 0 {
			return nil // inside a transaction
		}
		// A transaction's span, "relay wal", and its confirmation's, "slot
		// confirm": the place a relay dies with the rows published and the
		// slot not told is a boundary of the crash matrix
		// (worker/relay_wal/slot confirm#1).
		txCtx, tx := r.tracer.Start(ctx, "relay wal", trace.WithNewRoot())
		defer tx.End()
		if err := r.publish(rows); err != nil {
			return err // not confirmed: read again from the slot
		}
		if err := r.faults.Hit(FaultBeforeConfirm); err != nil {
			return fmt.Errorf("confirm %s to slot %s: %w", end, rd.slot, err)
		}
		rd.confirmed = end
		_, confirm := r.tracer.Start(txCtx, "slot confirm", trace.WithSpanKind(trace.SpanKindClient))
		defer confirm.End()
		return rd.confirm(ctx)
	}
	return nil
}

// reading is one connection's reading of the slot.
type reading struct {
	conn       *pgconn.PgConn
	slot       string
	d          decoder
	confirmed  pglogrepl.LSN // the end of the last transaction published
	nextStatus time.Time     // when the slot is told confirmed again
}

// receive waits for the next message of the stream until the slot is due
// its status, and sends it then. nil, nil: no message came meanwhile.
func (rd *reading) receive(ctx context.Context) ([]byte, error) {
	if time.Now().After(rd.nextStatus) {
		if err := rd.confirm(ctx); err != nil {
			return nil, err
		}
	}
	recvCtx, cancel := context.WithDeadline(ctx, rd.nextStatus)
	raw, err := rd.conn.ReceiveMessage(recvCtx)
	cancel()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case pgconn.Timeout(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read slot %s: %w", rd.slot, err)
	}
	switch m := raw.(type) {
	case *pgproto3.CopyData:
		return m.Data, nil
	case *pgproto3.ErrorResponse:
		return nil, fmt.Errorf("read slot %s: %w", rd.slot, pgconn.ErrorResponseToPgError(m))
	}
	return nil, nil
}

// confirm tells the slot that everything up to rd.confirmed is published
// (0: nothing yet; a status update is still sent, as the server's timeout
// wants).
func (rd *reading) confirm(ctx context.Context) error {
	err := pglogrepl.SendStandbyStatusUpdate(ctx, rd.conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: rd.confirmed})
	if err != nil {
		return fmt.Errorf("confirm %s to slot %s: %w", rd.confirmed, rd.slot, err)
	}
	rd.nextStatus = time.Now().Add(statusEvery)
	return nil
}

// publish publishes one transaction's rows, in order, all or nothing as far
// as the slot knows: a failure leaves its transaction unconfirmed.
func (r *LogicalRelay) publish(rows []*message.Message) error {
	if done := r.relay(rows); done < len(rows) {
		return fmt.Errorf("publish a transaction's outbox rows: %d of %d published (see the warning before)", done, len(rows))
	}
	return nil
}

// isSlotActive reports whether err is PostgreSQL refusing a slot another
// connection reads (SQLSTATE 55006, object_in_use).
func isSlotActive(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55006"
}
