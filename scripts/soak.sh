#!/usr/bin/env bash
# The soak of docs/performance.md: builds bin/orderpaid-lab and pays ORDERS orders
# (default 10000) with 30% duplicate webhooks while worker processes are
# SIGKILLed and restarted and a private nats-server is restarted, then checks
# every invariant; exits non-zero on any violation.
#
# ORDERPAID_DISRUPTIVE=1 also restarts the local PostgreSQL once, which breaks
# every other user of the server: run it alone (scripts/test.sh does, for the
# CI-sized soak test).
#
# Usage: scripts/soak.sh                       (extra flags go to `orderpaid-lab soak`)
#        ORDERS=300 scripts/soak.sh --rate 50
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"

extra=()
if [ "${ORDERPAID_DISRUPTIVE:-0}" = 1 ]; then extra+=(--restart-postgres); fi

echo "==> building bin/orderpaid and bin/orderpaid-lab"
go build -o bin/ ./cmd/orderpaid ./cmd/orderpaid-lab

echo "==> orderpaid-lab soak --orders ${ORDERS:-10000} ${extra[*]} $*"
exec bin/orderpaid-lab soak --orders "${ORDERS:-10000}" "${extra[@]}" "$@"
