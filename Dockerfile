# syntax=docker/dockerfile:1
#
# The orderpaid images, two static binaries (README.md, "Two binaries"):
#
#   - the default target, the last stage: orderpaid, the service and its
#     operator's tools (migrate, api, worker, backfill, reprocess, retention,
#     reconcile, doctor). It carries nothing of the lab. This is the image to
#     deploy; docker-compose.yml runs it as migrate, api and worker.
#   - the target lab: orderpaid-lab, the same service with the lab (the fakes,
#     the scenarios, the bench, the soak, the crash matrix, and the levers that
#     switch a guard off or crash a process). docker-compose.yml runs it as the
#     fakes and the scenario runner. Never deploy it.
#
# The builder has the whole Go toolchain; each runtime stage gets only its
# binary, so the images stay small and carry no compiler.
#
#   docker build -t orderpaid:dev .
#   docker run --rm orderpaid:dev -h
#   docker build --target lab -t orderpaid-lab:dev .
#   docker run --rm orderpaid-lab:dev -h

# ---- build ------------------------------------------------------------------
# Keep the Go minor version in step with the go directive in go.mod
# (internal/lab/doccheck/dockerfile_test.go checks it). The golang images set
# GOTOOLCHAIN=local, so an older builder would refuse to build, not download.
FROM golang:1.26 AS build

WORKDIR /src

# Modules first, in their own layer: this layer is rebuilt only when go.mod or
# go.sum change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download

COPY . .

# Both binaries, in one go build: the packages they share compile once.
# CGO_ENABLED=0: static binaries that need no libc, so they run on any small
# base image. -trimpath drops local paths from the binaries; -s -w drop the
# symbol table and DWARF debug data. The cache mount keeps compiled packages
# between builds (BuildKit, the default builder of current Docker).
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/orderpaid ./cmd/orderpaid-lab

# ---- lab --------------------------------------------------------------------
# orderpaid-lab, for the workshop and local development: built only when asked
# for (--target lab, or compose's build target), never by a plain
# `docker build .`. The same base and user as the runtime stage below (see
# there why).
FROM alpine:3.22 AS lab

RUN addgroup -S -g 10001 orderpaid \
    && adduser -S -D -H -u 10001 -G orderpaid orderpaid

COPY --from=build /out/orderpaid-lab /usr/local/bin/orderpaid-lab

USER 10001:10001

# 8080: the API (HTTP_ADDR). 8081: the fakes (FAKES_ADDR).
EXPOSE 8080 8081

# The subcommand is the container's command: `docker run orderpaid-lab:dev fakes`.
ENTRYPOINT ["orderpaid-lab"]
CMD ["-h"]

# ---- runtime ----------------------------------------------------------------
# The production image, and the default target: the last stage.
# Alpine rather than distroless or scratch, on purpose: its busybox wget is what
# the compose healthchecks use to call GET /readyz and GET /healthz. The
# binary itself needs nothing from the base image. The tradeoff is a few MB and
# a shell in the image; a distroless image would need a healthcheck subcommand
# in the binary instead.
FROM alpine:3.22

# A fixed, numeric, unprivileged user: orchestrators that enforce "run as non
# root" can verify a number, not a name.
RUN addgroup -S -g 10001 orderpaid \
    && adduser -S -D -H -u 10001 -G orderpaid orderpaid

# orderpaid only: orderpaid-lab stays in the build stage.
COPY --from=build /out/orderpaid /usr/local/bin/orderpaid

USER 10001:10001

# 8080: the API (HTTP_ADDR). The fakes are the lab's, in the lab stage.
EXPOSE 8080

# The subcommand is the container's command: `docker run orderpaid:dev api`.
ENTRYPOINT ["orderpaid"]
CMD ["-h"]
