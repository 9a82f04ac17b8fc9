#!/usr/bin/env bash
# Benchmarks the real pipeline (docs/performance.md): builds bin/orderpaid-lab and
# runs `orderpaid-lab bench` once per broker, one after the other (never two at
# once: they would share the CPUs). Needs PostgreSQL (DATABASE_URL, default
# the local server; its role must be allowed to CREATE DATABASE), and
# RabbitMQ and NATS for those brokers (scripts/services.sh starts them).
#
# Usage: scripts/bench.sh                  guards on/off and half load, on postgres, amqp and nats
#        BROKERS=postgres scripts/bench.sh --orders 20000
#        BROKERS=kafka scripts/bench.sh    on KAFKA_BROKERS, else on an in-process cluster (not a real Kafka)
#        RELAYS="poll logical" scripts/bench.sh   each broker with the polling relay, then the relay from
#                                          the WAL (OUTBOX_RELAY=logical; needs wal_level = logical)
#        scripts/bench.sh --full           also the 5M-row inbox and the 1M-order backfill (postgres;
#                                          takes an hour or more on 2 cores)
# Extra flags go to every `orderpaid-lab bench` (orderpaid-lab bench -h lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"

full=()
args=()
for a in "$@"; do
  if [ "$a" = "--full" ]; then full=(--inbox-rows 5000000 --backfill 1000000); else args+=("$a"); fi
done

echo "==> building bin/orderpaid and bin/orderpaid-lab"
go build -o bin/ ./cmd/orderpaid ./cmd/orderpaid-lab

for broker in ${BROKERS:-postgres amqp nats}; do
  extra=()
  if [ "$broker" = postgres ]; then extra=("${full[@]}"); fi
  for relay in ${RELAYS:-poll}; do
    echo
    echo "==> orderpaid-lab bench --broker $broker --relay $relay ${extra[*]} ${args[*]}"
    bin/orderpaid-lab bench --broker "$broker" --relay "$relay" "${extra[@]}" "${args[@]}"
  done
done
