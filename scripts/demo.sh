#!/usr/bin/env bash
# The demo command of the README (make demo): builds orderpaid, applies the
# schema, starts api + worker + fake providers in one process, walks one order
# through the flow while the providers repeat themselves, and shows the audit.
# Needs Go and PostgreSQL (DATABASE_URL, default: the local server).
# KEEP=1 leaves the server running afterwards (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@localhost:5432/postgres?sslmode=disable}"

echo "==> building bin/orderpaid"
go build -o bin/orderpaid ./cmd/orderpaid

echo "==> applying the schema to $DATABASE_URL"
bin/orderpaid migrate

echo "==> starting orderpaid all (api :8080, fakes :8081; logs in bin/demo.log)"
bin/orderpaid all >bin/demo.out 2>bin/demo.log &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  grep -q "worker running" bin/demo.out 2>/dev/null && break
  kill -0 $server 2>/dev/null || { echo "orderpaid all stopped; see bin/demo.log:"; tail -20 bin/demo.log; exit 1; }
  sleep 0.2
done

echo "==> walking one order through the flow"
bin/orderpaid demo --api http://localhost:8080 --fakes http://localhost:8081

if [ "${KEEP:-0}" = 1 ]; then
  echo "==> still running; Ctrl-C to stop"
  wait $server
fi
