#!/usr/bin/env bash
# The demo command of the README (make demo): builds orderpaid, applies the
# schema, starts api + worker + fake providers in one process, walks one order
# through the flow while the providers repeat themselves, and shows the audit.
# Needs Go and PostgreSQL (DATABASE_URL, default: the local server).
# Listens where HTTP_ADDR and FAKES_ADDR say (default 127.0.0.1:8080 and
# 127.0.0.1:8081: loopback only, as every dev run); the demo reaches the
# server at the addresses it really bound, or at API_URL and FAKES_URL when
# they are set. KEEP=1 leaves the server running afterwards (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@localhost:5432/postgres?sslmode=disable}"

echo "==> building bin/orderpaid and bin/orderpaid-lab"
go build -o bin/ ./cmd/orderpaid ./cmd/orderpaid-lab

echo "==> applying the schema to $DATABASE_URL"
bin/orderpaid migrate

echo "==> starting orderpaid-lab all (api ${HTTP_ADDR:-127.0.0.1:8080}, fakes ${FAKES_ADDR:-127.0.0.1:8081}; logs in bin/demo.log)"
bin/orderpaid-lab all >bin/demo.out 2>bin/demo.log &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  grep -q "worker running" bin/demo.out 2>/dev/null && break
  kill -0 $server 2>/dev/null || { echo "orderpaid-lab all stopped; see bin/demo.log:"; tail -20 bin/demo.log; exit 1; }
  sleep 0.2
done

grep -q "worker running" bin/demo.out 2>/dev/null || { echo "orderpaid-lab all did not start within 10s; see bin/demo.log:"; tail -20 bin/demo.log; exit 1; }

# "api listening on http://[::]:8080": the address bound, as a local URL.
listening() {
  sed -n "s#^$1 listening on ##p" bin/demo.out | head -1 | sed -e 's#//\[::\]:#//localhost:#' -e 's#//0\.0\.0\.0:#//localhost:#'
}
api_url="${API_URL:-$(listening api)}"
fakes_url="${FAKES_URL:-$(listening fakes)}"

echo "==> walking one order through the flow (API $api_url, fakes $fakes_url)"
bin/orderpaid-lab demo --api "$api_url" --fakes "$fakes_url"

if [ "${KEEP:-0}" = 1 ]; then
  echo "==> still running (API $api_url, fakes $fakes_url, the lab page $api_url/lab); Ctrl-C to stop"
  wait $server
fi
