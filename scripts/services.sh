#!/usr/bin/env bash
# Starts the local services the tests use, if they are down: PostgreSQL,
# RabbitMQ and NATS JetStream. Safe to run when they are already up.
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
