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
// The same holds the other way round: a worker on postgres or nats never
// reads RabbitMQ's queues again, one on postgres or amqp never reads NATS's
// durable consumers. So a worker first counts what its consumer groups have
// not read in every broker it does not use (the tables here, the others in
// backlog.go), and refuses to start while any is left
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

// RefuseStrandedMessages is what a worker calls before it starts: it refuses
// (returns an error) while a broker other than cfg.Broker holds messages that
// groups (topic -> consumer group) have not read under cfg.BrokerPrefix: the
// postgres broker's tables (on BROKER=amqp or nats), RabbitMQ's queues (on
// postgres or nats), NATS JetStream's durable consumers (on postgres or
// amqp). The error names the count, where they are and how to drain them.
//
// RabbitMQ and NATS are checked at cfg.AMQPURL and cfg.NATSURL (their
// defaults when unset), Kafka's consumer groups at cfg.KafkaBrokers only
// when KAFKA_BROKERS is set; one that cannot be reached within checkTimeout is
// not checked, which the Info line says: a deployment that never ran it
// does not need it to start. With abandon (--abandon-postgres-backlog) the
// postgres broker's unread messages are logged at WARN level and the worker
// starts: those messages are then never handled. Messages left on RabbitMQ
// or NATS are given up with the broker's own tool (the error says which).
func RefuseStrandedMessages(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, groups map[string]string, abandon bool, logger *slog.Logger) error {
	var refusals []error
	others := []string{config.BrokerPostgres, config.BrokerAMQP, config.BrokerNATS}
	if cfg.KafkaBrokersSet {
		others = append(others, config.BrokerKafka) // never at the default address: see Config.KafkaBrokersSet
	}
	for _, other := range others {
		if other == cfg.Broker {
			continue // this worker reads them itself
		}
		s, err := strandedOn(ctx, other, cfg, pool, groups)
		if ctx.Err() != nil {
			return ctx.Err() // stopped while checking: nothing to report
		}
		if errors.Is(err, errUnreachable) {
			logger.Info("broker not reachable, so not checked for messages left there by a worker on it "+
				"(start it to have them checked; nothing to do if this deployment never used it)",
				"broker", other, "url", config.RedactURL(s.url), "error", err.Error())
			continue
		}
		if err != nil {
			return fmt.Errorf("check %s for unread messages before starting on BROKER=%s: %w", s.where, cfg.Broker, err)
		}
		if s.total == 0 {
			continue
		}
		drain := "drain them first: stop the api, run `BROKER=" + other + " orderpaid worker` (same DATABASE_URL" + s.sameURL +
			" and BROKER_PREFIX) until this count is 0, stop it, then start on " + cfg.Broker + ` (docs/operations.md, "Switching brokers")`
		if other == config.BrokerPostgres && abandon {
			logger.Warn("the postgres broker's tables hold messages no consumer has read, and --abandon-postgres-backlog "+
				"starts this worker without them: their effects will never happen", "broker", cfg.Broker,
				"unread", s.total, "where", strings.Join(s.each, ", "), "to_recover", drain)
			continue
		}
		refusals = append(refusals, fmt.Errorf("BROKER=%s, but %s hold %d message(s) no consumer has read yet (%s): "+
			"a worker on %s never reads them, so their effects (orders marked paid, e-mails) would never happen; "+
			"%s, or %s",
			cfg.Broker, s.where, s.total, strings.Join(s.each, ", "), cfg.Broker, drain, s.giveUp))
	}
	return errors.Join(refusals...)
}

// stranded is what one broker holds that a worker on another never reads.
type stranded struct {
	where   string   // the broker's place, as the error names it
	url     string   // where it was looked for (RabbitMQ, NATS)
	sameURL string   // the variable a worker needs to reach it, beside DATABASE_URL
	giveUp  string   // how to give the messages up instead
	total   int64    // messages unread
	each    []string // per topic, where they are
}

// strandedOn counts what broker holds unread for groups.
func strandedOn(ctx context.Context, broker string, cfg config.Config, pool *pgxpool.Pool, groups map[string]string) (stranded, error) {
	var s stranded
	var backlog map[string]int64
	var err error
	var place func(topic, group string) string
	switch broker {
	case config.BrokerPostgres:
		s = stranded{where: "the postgres broker's tables", giveUp: "start with --abandon-postgres-backlog to lose them"}
		backlog, err = PostgresBacklog(ctx, pool, cfg.BrokerPrefix, groups)
		place = func(topic, group string) string {
			return "watermill_" + cfg.BrokerPrefix + topic + " unread by " + group
		}
	case config.BrokerAMQP:
		s = stranded{where: "RabbitMQ's queues at " + config.RedactURL(cfg.AMQPURL), url: cfg.AMQPURL, sameURL: ", AMQP_URL",
			giveUp: "purge those queues to lose them (rabbitmqctl purge_queue NAME)"}
		backlog, err = AMQPBacklog(ctx, cfg.AMQPURL, cfg.BrokerPrefix, groups)
		place = func(topic, group string) string { return "queue " + AMQPQueue(cfg.BrokerPrefix+topic, group) }
	case config.BrokerKafka:
		s = stranded{where: "Kafka's consumer groups at " + strings.Join(cfg.KafkaBrokers, ","), sameURL: ", KAFKA_BROKERS",
			giveUp: "move those groups' offsets to the end to lose them (kafka-consumer-groups.sh --bootstrap-server " + strings.Join(cfg.KafkaBrokers, ",") +
				" --group NAME --reset-offsets --to-latest --all-topics --execute)"}
		backlog, err = KafkaBacklog(ctx, cfg.KafkaBrokers, cfg.BrokerPrefix, groups)
		place = func(topic, group string) string {
			return "group " + KafkaGroup(cfg.BrokerPrefix+topic, group) + " of topic " + cfg.BrokerPrefix + topic
		}
	case config.BrokerNATS:
		s = stranded{where: "NATS JetStream's consumers at " + config.RedactURL(cfg.NATSURL), url: cfg.NATSURL, sameURL: ", NATS_URL",
			giveUp: "purge those streams to lose them (nats stream purge NAME)"}
		backlog, err = NATSBacklog(ctx, cfg.NATSURL, cfg.BrokerPrefix, groups)
		place = func(topic, group string) string {
			return "consumer " + NATSDurable(cfg.BrokerPrefix+topic, group) + " of stream " + cfg.BrokerPrefix + topic
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(backlog)) {
		if n := backlog[topic]; n > 0 {
			s.total += n
			s.each = append(s.each, fmt.Sprintf("%d in %s", n, place(topic, groups[topic])))
		}
	}
	return s, err
}
