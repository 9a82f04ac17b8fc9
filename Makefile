# The two commands of the README, and a few conveniences.
.PHONY: demo test build generate services footprint

## demo: build, migrate, run api + worker + fakes in one process and walk one order through (needs PostgreSQL)
demo:
	bash scripts/demo.sh

## test: gofmt, sqlc drift, go vet, the whole test suite against the real services
test:
	bash scripts/test.sh

## build: both binaries in ./bin: orderpaid (production) and orderpaid-lab (the service with the lab)
build:
	go build -o bin/ ./cmd/orderpaid ./cmd/orderpaid-lab

## generate: regenerate internal/platform/queries (sql/queries) and internal/lab/labqueries (sql/lab) with the pinned sqlc
generate:
	go tool -modfile=scripts/tools/go.mod sqlc generate

## services: start PostgreSQL, RabbitMQ and NATS if they are down
services:
	bash scripts/services.sh

## footprint: the files one order runs through (a coverage build, one order, then a second more, against an idle run as long as the order)
footprint:
	bash scripts/footprint.sh
