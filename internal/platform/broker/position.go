package broker

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The position in the effects' transaction: a guard of the batch consumer's
// executions (CONSUMER_POSITION=with-effects, batch mode). A consumer's
// position, where its group has read to, usually commits apart from the
// effects: on the broker, after them. Between the two commits a crash, a
// lost COMMIT answer or an expired lease repeats the whole batch, and every
// guard answers already_applied. Kept in the effects' database instead, the
// position commits with them, in one COMMIT, or neither does: what the
// batch applied is never read again. Its two homes: BatchReader.WithEffects
// (pgbatch.go) on the postgres broker, kafkaPositions (kafkaposition.go), a
// row per partition, on Kafka.
//
// It removes only the repeats of that gap. A message twice in the topic (a
// webhook sent twice, the relay's re-publish, a backfill run again), a repeat
// the handler asks for, and an e-mail sent before a transaction that was
// then lost still need their own guards.
// docs/techniques/guards-in-bulk.md#the-position-in-the-effects-transaction
// teaches it; docs/kafka.md the Kafka half.

// ErrPositionWithEffects: this broker cannot commit a consumer's position
// in the effects' transaction.
var ErrPositionWithEffects = errors.New("the position commits with the effects only where it can be kept in PostgreSQL: set BROKER=postgres or BROKER=kafka, or CONSUMER_POSITION=separate")

// BatchReaderWithEffects returns a batch source of topic for group whose
// position commits in the effects' transaction, on pool (the service's
// database): on the postgres broker its reader's (BatchReader.WithEffects),
// on Kafka a row per partition in kafka_positions (kafkaPositions). On
// RabbitMQ and NATS the position is an ack the broker keeps, and it returns
// ErrPositionWithEffects.
func (b *Broker) BatchReaderWithEffects(pool *pgxpool.Pool, topic, group string, size int) (BatchSource, error) {
	switch {
	case b.pool != nil:
		return NewBatchReader(b.pool, b.prefix+topic, group, size).WithEffects(), nil
	case b.Name == "kafka":
		src, err := b.batchSource(b.prefix+topic, group, size)
		if err != nil {
			return nil, err
		}
		src.(*kafkaBatchSource).positions = &kafkaPositions{pool: pool}
		return src, nil
	}
	return nil, fmt.Errorf("%s: %w", b.Name, ErrPositionWithEffects)
}
