package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The doctor's checks of the services: PostgreSQL at DATABASE_URL and the
// broker BROKER chose. Each connects for real, with the process's own
// settings, so "ok" means the api and the worker will get in too.

// startPostgres is what starts the local PostgreSQL cluster of a Debian-like
// machine; scripts/services.sh starts every service the tests use.
const startPostgres = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start (scripts/services.sh starts every service)"

// checkPostgres reports three lines: the server reached with working
// authentication, the database of DATABASE_URL, and whether the role may
// create databases (the scenario runner, bench, soak and the tests each make
// their own).
func checkPostgres(ctx context.Context, dbURL string, timeout time.Duration) []checkResult {
	skipped := func(first checkResult) []checkResult {
		return []checkResult{first,
			{"database", statusSkip, "not checked: PostgreSQL not reached"},
			{"CREATEDB", statusSkip, "not checked: PostgreSQL not reached"}}
	}
	cc, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return skipped(fail("PostgreSQL", "DATABASE_URL %s does not parse (%v): want postgres://USER[:PASSWORD]@HOST:PORT/DATABASE?sslmode=disable",
			config.RedactURL(dbURL), err))
	}
	cc.ConnectTimeout = timeout
	where := fmt.Sprintf("%s:%d as %s", cc.Host, cc.Port, cc.User)
	conn, err := pgx.ConnectConfig(ctx, cc)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name: authenticated, no such database
		admin := cc.Copy()
		admin.Database = "postgres"
		conn, err = pgx.ConnectConfig(ctx, admin)
		if err != nil {
			return skipped(postgresFailure(where, cc, err))
		}
		defer conn.Close(context.WithoutCancel(ctx))
		f, err := readServerFacts(ctx, conn)
		if err != nil {
			return skipped(fail("PostgreSQL", "reached %s, but could not read the server's version and the role: %v", where, err))
		}
		missing := fail("database", "%q does not exist on %s: create it, then apply the schema: createdb -h %s -p %d -U %s %s && orderpaid migrate",
			cc.Database, where, cc.Host, cc.Port, cc.User, cc.Database)
		if !f.canCreate {
			missing.detail += fmt.Sprintf(" (role %s may not create it: a superuser runs it, or ALTER ROLE %s CREATEDB)", cc.User, cc.User)
		}
		return []checkResult{ok("PostgreSQL", "reached %s (PostgreSQL %s)", where, f.version), missing, createdbResult(cc.User, f.canCreate)}
	}
	if err != nil {
		return skipped(postgresFailure(where, cc, err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	f, err := readServerFacts(ctx, conn)
	if err != nil {
		return skipped(fail("PostgreSQL", "reached %s, but could not read the server's version and the role: %v", where, err))
	}
	db := ok("database", "%q exists, schema applied", cc.Database)
	if !f.migrated {
		db = ok("database", "%q exists, no schema yet: `orderpaid migrate` applies it (make demo does)", cc.Database)
	}
	return []checkResult{ok("PostgreSQL", "reached %s (PostgreSQL %s)", where, f.version), db, createdbResult(cc.User, f.canCreate)}
}

func createdbResult(role string, canCreate bool) checkResult {
	if canCreate {
		return ok("CREATEDB", "role %s may create databases (orderpaid-lab scenario, bench, soak and the tests make their own)", role)
	}
	return fail("CREATEDB", "role %s may not create databases, and orderpaid-lab scenario, bench, soak and the tests make their own: as a superuser, ALTER ROLE %s CREATEDB",
		role, role)
}

// serverFacts is what the doctor reads once connected.
type serverFacts struct {
	version   string
	canCreate bool // the role has CREATEDB or is a superuser
	migrated  bool // the orders table exists
}

// readServerFacts asks the server about itself. It reads the catalogue, not
// the schema, so it is not an sqlc query (like the statements of tempdb).
func readServerFacts(ctx context.Context, conn *pgx.Conn) (f serverFacts, err error) {
	err = conn.QueryRow(ctx, `SELECT current_setting('server_version'), r.rolcreatedb OR r.rolsuper, to_regclass('orders') IS NOT NULL
FROM pg_roles r WHERE r.rolname = current_user`).Scan(&f.version, &f.canCreate, &f.migrated)
	return f, err
}

// postgresFailure turns a failed connection into what to do. The two
// authentication methods a fresh Debian install sets up are the usual
// cause: peer on the Unix socket (the OS user must be named like the role)
// and scram-sha-256 on TCP (a password is required).
func postgresFailure(where string, cc *pgx.ConnConfig, err error) checkResult {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		if strings.Contains(err.Error(), "password") || strings.Contains(err.Error(), "SASL") {
			return fail("PostgreSQL", "%s: %v: %s", where, err, passwordFix(cc))
		}
		reason := oneLineOf(err.Error())
		if opErr := (*net.OpError)(nil); errors.As(err, &opErr) {
			reason = opErr.Error() // "dial tcp 127.0.0.1:5432: connect: connection refused", once
		}
		return fail("PostgreSQL", "cannot reach PostgreSQL at %s (%s): is it running? start it: %s; or set DATABASE_URL to yours",
			where, reason, startPostgres)
	}
	msg := pgErr.Message
	switch {
	case pgErr.Code == "28P01": // invalid_password
		return fail("PostgreSQL", "%s: %s: %s", where, msg, passwordFix(cc))
	case strings.Contains(msg, "Peer authentication") || strings.Contains(msg, "Ident authentication"):
		return fail("PostgreSQL", "%s: %s: peer authentication (Debian's default on the Unix socket) admits only the operating-system user named like the role: "+
			"connect over TCP instead, host localhost in DATABASE_URL (postgres://%s@localhost:%d/%s?sslmode=disable), with trust or a password (%s)",
			where, msg, cc.User, cc.Port, cc.Database, trustFix)
	case strings.Contains(msg, "no pg_hba.conf entry"):
		return fail("PostgreSQL", "%s: %s: pg_hba.conf lets this connection in nowhere: add the line `host all all 127.0.0.1/32 trust` to /etc/postgresql/*/main/pg_hba.conf, then %s",
			where, msg, reloadPostgres)
	case strings.Contains(msg, "role") && strings.Contains(msg, "does not exist"):
		return fail("PostgreSQL", "%s: %s: create the role (sudo -u postgres createuser --createdb %s) or use the postgres role in DATABASE_URL", where, msg, cc.User)
	}
	return fail("PostgreSQL", "%s: %s (SQLSTATE %s)", where, msg, pgErr.Code)
}

const (
	reloadPostgres = "reload it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main reload"
	trustFix       = "for trust, set the method of the `host all all 127.0.0.1/32` line of /etc/postgresql/*/main/pg_hba.conf to trust and " + reloadPostgres
)

// passwordFix is what to do when the server asks for a password: give the
// right one in the URL, or let local TCP connections in without one.
func passwordFix(cc *pgx.ConnConfig) string {
	url := fmt.Sprintf("postgres://%s:PASSWORD@%s:%d/%s?sslmode=disable", cc.User, cc.Host, cc.Port, cc.Database)
	if cc.Password != "" {
		return fmt.Sprintf("the password in DATABASE_URL is not role %s's: correct it (%s), or %s", cc.User, url, trustFix)
	}
	return fmt.Sprintf("the server wants a password (scram-sha-256: Debian's default for TCP connections) and DATABASE_URL has none: "+
		"set one (sudo -u postgres psql -c \"ALTER ROLE %s PASSWORD 'PASSWORD'\") and put it in the URL, %s; or %s", cc.User, url, trustFix)
}

// checkBroker connects to the broker BROKER names: nothing for postgres
// (the database is the broker), RabbitMQ at AMQP_URL, NATS at NATS_URL with
// JetStream enabled, Kafka at KAFKA_BROKERS.
func checkBroker(ctx context.Context, cfg config.Config, timeout time.Duration) checkResult {
	switch cfg.Broker {
	case config.BrokerAMQP:
		return checkAMQP(cfg.AMQPURL, timeout)
	case config.BrokerNATS:
		return checkNATS(ctx, cfg.NATSURL, timeout)
	case config.BrokerKafka:
		return checkKafka(ctx, cfg.KafkaBrokers, timeout)
	}
	return ok("broker", "postgres: the database above carries the messages too, nothing else to run (BROKER=amqp, nats or kafka for the others)")
}

// checkKafka asks the cluster at KAFKA_BROKERS for its brokers, as the
// worker's first contact does.
func checkKafka(ctx context.Context, brokers []string, timeout time.Duration) checkResult {
	where := strings.Join(brokers, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("orderpaid doctor"), kgo.DialTimeout(timeout))
	if err != nil {
		return fail("broker", "KAFKA_BROKERS %s: %v", where, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return fail("broker", "cannot reach Kafka at %s (%v): is it running? set KAFKA_BROKERS to your cluster's host:port list, or BROKER=postgres", where, err)
	}
	return ok("broker", "kafka: %d broker(s) in cluster %s, reached at %s", len(m.Brokers), m.Cluster, where)
}

func checkAMQP(url string, timeout time.Duration) checkResult {
	where := config.RedactURL(url)
	conn, err := amqp091.DialConfig(url, amqp091.Config{Dial: amqp091.DefaultDial(timeout)})
	var amqpErr *amqp091.Error
	switch {
	case errors.Is(err, amqp091.ErrCredentials) || errors.As(err, &amqpErr) && amqpErr.Code == amqp091.AccessRefused:
		return fail("broker", "RabbitMQ at %s refused the user and password of AMQP_URL (%v): correct them; RabbitMQ's own guest user may log in only from localhost", where, err)
	case errors.As(err, &amqpErr) && amqpErr.Code == amqp091.NotAllowed:
		return fail("broker", "RabbitMQ at %s: %v: the virtual host in AMQP_URL does not exist or the user may not use it (the default, /, is written as a trailing slash)", where, err)
	case err != nil:
		return fail("broker", "cannot reach RabbitMQ at %s (%v): is it running? start it: rabbitmq-server -detached; or set AMQP_URL, or BROKER=postgres", where, err)
	}
	defer conn.Close()
	return ok("broker", "amqp: RabbitMQ %v at %s", conn.Properties["version"], where)
}

func checkNATS(ctx context.Context, url string, timeout time.Duration) checkResult {
	where := config.RedactURL(url)
	nc, err := nats.Connect(url, nats.Name("orderpaid doctor"), nats.Timeout(timeout), nats.MaxReconnects(0))
	switch {
	case errors.Is(err, nats.ErrAuthorization):
		return fail("broker", "NATS at %s refused the credentials of NATS_URL (%v): correct them", where, err)
	case err != nil:
		return fail("broker", "cannot reach NATS at %s (%v): is nats-server running? start it with JetStream: nats-server -js; or set NATS_URL, or BROKER=postgres", where, err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err = js.AccountInfo(nats.Context(ctx))
	}
	switch {
	case errors.Is(err, nats.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrJetStreamNotEnabledForAccount):
		return fail("broker", "NATS at %s runs without JetStream, which BROKER=nats needs: restart nats-server with -js (and -sd DIR, where it keeps the streams)", where)
	case err != nil:
		return fail("broker", "NATS at %s: JetStream does not answer (%v): restart nats-server with -js", where, err)
	}
	return ok("broker", "nats: NATS %s at %s, JetStream enabled", nc.ConnectedServerVersion(), where)
}

// oneLineOf puts a multi-line error message (pgconn's) on one line.
func oneLineOf(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkOnDatabase runs check, named name, on a connection to DATABASE_URL that
// lasts timeout; not reached, the check is skipped (the PostgreSQL line says
// why).
func checkOnDatabase(ctx context.Context, name, dbURL string, timeout time.Duration, check func(context.Context, *pgx.Conn) checkResult) checkResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return checkResult{name, statusSkip, "not checked: PostgreSQL not reached"}
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return check(ctx, conn)
}

// checkOutboxRelay checks, with OUTBOX_RELAY=logical, what the logical relay
// needs (wal_level = logical) and what its slot costs the server: WAL it
// keeps because nobody has confirmed it. A slot nobody reads that keeps more
// than one WAL segment is a failure: it grows until the disk is full, or
// until max_slot_wal_keep_size invalidates the slot.
func checkOutboxRelay(ctx context.Context, conn *pgx.Conn) checkResult {
	const name = "OUTBOX_RELAY"
	var level, database string
	if err := conn.QueryRow(ctx, `SELECT current_setting('wal_level'), current_database()`).Scan(&level, &database); err != nil {
		return fail(name, "could not read wal_level: %v", err)
	}
	if level != "logical" {
		return fail(name, "logical needs wal_level = logical, and the server has %s: run scripts/services.sh (the local cluster, once, with a restart), "+
			"or ALTER SYSTEM SET wal_level = logical and restart PostgreSQL; or set OUTBOX_RELAY=poll", level)
	}
	slot := outbox.SlotName(database)
	var active bool
	var retained int64
	err := conn.QueryRow(ctx, `SELECT active, coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint
		FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&active, &retained)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ok(name, "logical: wal_level is logical; slot %s not made yet (the first api or worker makes it)", slot)
	case err != nil:
		return fail(name, "could not read slot %s: %v", slot, err)
	case !active && retained > 16<<20:
		return fail(name, "slot %s has no reader and keeps %d MiB of WAL on the server, growing with every write: start a worker with "+
			"OUTBOX_RELAY=logical, or, if logical is given up, start one with OUTBOX_RELAY=poll (it drops the slot once the polling relay "+
			"will publish all it holds)", slot, retained>>20)
	}
	reader := "read by a relay"
	if !active {
		reader = "no reader now"
	}
	return ok(name, "logical: slot %s, %s, keeps %d KiB of WAL", slot, reader, retained>>10)
}

// checkSlots fails on a logical replication slot of the database that no
// connection reads and that holds WAL, whatever OUTBOX_RELAY says: the
// server keeps every WAL segment written since, until its disk fills
// (outbox.IdleSlots). With OUTBOX_RELAY=logical the outbox's own slot is the
// OUTBOX_RELAY line's: its relay is a worker that may simply not run now.
func checkSlots(ctx context.Context, conn *pgx.Conn, cfg config.Config) checkResult {
	const name = "slots"
	slots, err := outbox.IdleSlots(ctx, conn)
	if err != nil {
		return fail(name, "could not read the replication slots: %v", err)
	}
	var idle []string
	for _, s := range slots {
		switch {
		case s.Outbox && cfg.OutboxRelay == config.RelayLogical:
		case s.Outbox:
			idle = append(idle, fmt.Sprintf("slot %s (the logical relay's; OUTBOX_RELAY=poll reads none) keeps %s of WAL with no reader: "+
				"start a worker, which drops it once the polling relay will publish all it holds, or drop it: %s", s.Name, s.Held(), s.DropCommand()))
		default:
			idle = append(idle, fmt.Sprintf("slot %s keeps %s of WAL with no reader: if nothing will read it again, drop it: %s", s.Name, s.Held(), s.DropCommand()))
		}
	}
	if len(idle) > 0 {
		return fail(name, "%s; the server keeps more with every write until its disk fills", strings.Join(idle, "; "))
	}
	return ok(name, "no replication slot of this database without a reader")
}
