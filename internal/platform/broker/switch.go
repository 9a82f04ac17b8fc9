package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Switching brokers
//
// On BROKER=postgres the relay publishes each message as a row of the topic's
// table (watermill_<topic>) and every consumer group reads it from there. A
// worker started with BROKER=amqp or nats reads RabbitMQ or NATS instead, and
// nothing reads those tables again: a message relayed to them but not read
// yet is stranded. Nothing reports it: the outbox says relayed (backlog 0),
// no handler failed (poison empty), /readyz is fine; the effects behind the
// messages (an order marked paid, a commission, an e-mail) never happen.
//
// So a worker on another broker first counts what the consumer groups have
// not read in those tables, and refuses to start while any is left
// (RefuseStrandedMessages). docs/operations.md has the switch procedure:
// drain on the old broker, then switch.

// PostgresBacklog counts, for each topic of groups (topic -> consumer group,
// as the worker consumes them, without BROKER_PREFIX), the messages of the
// postgres broker's table of prefix+topic that the group has not read: those
// after its position in the topic's offsets table, or every one when the
// group has no position yet (it would start at the first row). A topic with
// no table (the postgres broker was never used) counts 0.
//
// The count is one range of the table's primary key, (transaction_id,
// offset) after the position, like the consumers' poll: a table holding a
// month of read messages costs the same as an empty one. A group read in
// lanes keeps its positions under other names (LaneGroup): its messages all
// count as unread, which refuses a switch too often, never too rarely.
func PostgresBacklog(ctx context.Context, pool *pgxpool.Pool, prefix string, groups map[string]string) (map[string]int64, error) {
	backlog := make(map[string]int64, len(groups))
	for topic, group := range groups {
		n, err := unreadBy(ctx, pool, prefix+topic, group)
		if err != nil {
			return nil, err
		}
		backlog[topic] = n
	}
	return backlog, nil
}

// unreadBy counts the messages of topic's table after group's position.
func unreadBy(ctx context.Context, pool *pgxpool.Pool, topic, group string) (int64, error) {
	messages := PostgresSchema{}.MessagesTable(topic)
	positions := wsql.DefaultPostgreSQLOffsetsAdapter{}.MessagesOffsetsTable(topic)
	var hasMessages, hasPositions bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL`, messages, positions).
		Scan(&hasMessages, &hasPositions); err != nil {
		return 0, fmt.Errorf("look for the postgres broker's tables of topic %s: %w", topic, err)
	}
	if !hasMessages {
		return 0, nil
	}
	// Where a group with no row starts: watermill-sql's zero offset.
	txID, offset := "0", int64(0)
	if hasPositions {
		err := pool.QueryRow(ctx, `SELECT last_processed_transaction_id::text, coalesce(offset_acked, 0) FROM `+positions+
			` WHERE consumer_group = $1`, group).Scan(&txID, &offset)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("read the position of %s on topic %s: %w", group, topic, err)
		}
	}
	var n int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+messages+` WHERE (transaction_id, "offset") > ($1::xid8, $2::bigint)`,
		txID, offset).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the messages of topic %s not read by %s: %w", topic, group, err)
	}
	return n, nil
}

// RefuseStrandedMessages is what a worker calls before it starts: on a broker
// other than postgres it refuses (returns an error) while the postgres
// broker's tables hold messages that groups (topic -> consumer group) have
// not read, naming the count and how to drain them. With abandon
// (--abandon-postgres-backlog) it logs the same at WARN level and lets the
// worker start: those messages are then never handled. On postgres it does
// nothing: that worker reads the tables itself.
func RefuseStrandedMessages(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, groups map[string]string, abandon bool, logger *slog.Logger) error {
	if cfg.Broker == config.BrokerPostgres {
		return nil
	}
	backlog, err := PostgresBacklog(ctx, pool, cfg.BrokerPrefix, groups)
	if err != nil {
		return fmt.Errorf("check the postgres broker's tables for unread messages before starting on BROKER=%s: %w", cfg.Broker, err)
	}
	var total int64
	var each []string
	for _, topic := range slices.Sorted(maps.Keys(backlog)) {
		if n := backlog[topic]; n > 0 {
			total += n
			each = append(each, fmt.Sprintf("%d in watermill_%s%s unread by %s", n, cfg.BrokerPrefix, topic, groups[topic]))
		}
	}
	if total == 0 {
		return nil
	}
	drain := "drain them first: stop the api, run `BROKER=postgres orderpaid worker` (same DATABASE_URL and BROKER_PREFIX) " +
		"until this count is 0, stop it, then start on " + cfg.Broker + ` (docs/operations.md, "Switching brokers")`
	if abandon {
		logger.Warn("the postgres broker's tables hold messages no consumer has read, and --abandon-postgres-backlog "+
			"starts this worker without them: their effects will never happen", "broker", cfg.Broker,
			"unread", total, "where", strings.Join(each, ", "), "to_recover", drain)
		return nil
	}
	return fmt.Errorf("BROKER=%s, but the postgres broker's tables hold %d message(s) no consumer has read yet (%s): "+
		"a worker on %s never reads them, so their effects (orders marked paid, e-mails) would never happen; "+
		"%s, or start with --abandon-postgres-backlog to lose them",
		cfg.Broker, total, strings.Join(each, ", "), cfg.Broker, drain)
}
