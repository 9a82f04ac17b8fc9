#!/usr/bin/env bash
# Starts the local services the tests use, if they are down: PostgreSQL
# (with wal_level = logical, for the logical relay), RabbitMQ and NATS
# JetStream. Safe to run when they are already up.
# Usage: scripts/services.sh
set -euo pipefail

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() { # name port seconds
  for _ in $(seq 1 "$3"); do up "$2" && { echo "services: $1 is up on :$2"; return 0; }; sleep 1; done
  echo "services: $1 did not come up on :$2 within $3s" >&2
  return 1
}

if ! up 5432; then
  echo "services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
fi
wait_for PostgreSQL 5432 60

# The logical relay (OUTBOX_RELAY=logical) reads the outbox from a
# replication slot, which needs wal_level = logical; the tests make a slot
# per test database, so the server gets room for 64 slots and readers. Set
# once, with the restart wal_level needs; a cluster already set is left alone.
psql_local() { psql -h 127.0.0.1 -U postgres -d postgres -Atqc "$1"; }
if [ "$(psql_local 'SHOW wal_level')" != logical ]; then
  echo "services: setting wal_level = logical on the local PostgreSQL (once; it restarts the server)"
  psql_local "ALTER SYSTEM SET wal_level = logical"
  psql_local "ALTER SYSTEM SET max_replication_slots = 64"
  psql_local "ALTER SYSTEM SET max_wal_senders = 64"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main restart
  wait_for PostgreSQL 5432 60
fi

if ! up 5672; then
  echo "services: starting RabbitMQ"
  rabbitmq-server -detached
fi
wait_for RabbitMQ 5672 120

if ! up 4222; then
  echo "services: starting NATS JetStream"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
fi
wait_for "NATS JetStream" 4222 60
