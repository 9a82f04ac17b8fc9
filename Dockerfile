# syntax=docker/dockerfile:1
#
# The orderpaid image: one static binary, every subcommand (docker-compose.yml
# runs the same image as migrate, api, worker, fakes and the scenario runner).
#
# Two stages. The builder has the whole Go toolchain; the runtime stage gets
# only the binary, so the image stays small and carries no compiler.
#
#   docker build -t orderpaid:dev .
#   docker run --rm orderpaid:dev -h

# ---- build ------------------------------------------------------------------
# Keep the Go minor version in step with the go directive in go.mod
# (internal/platform/config/dockerfile_test.go checks it). The golang images set
# GOTOOLCHAIN=local, so an older builder would refuse to build, not download.
FROM golang:1.26 AS build

WORKDIR /src

# Modules first, in their own layer: this layer is rebuilt only when go.mod or
# go.sum change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download

COPY . .

# CGO_ENABLED=0: a static binary that needs no libc, so it runs on any small
# base image. -trimpath drops local paths from the binary; -s -w drop the
# symbol table and DWARF debug data. The cache mount keeps compiled packages
# between builds (BuildKit, the default builder of current Docker).
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/orderpaid ./cmd/orderpaid

# ---- runtime ----------------------------------------------------------------
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

COPY --from=build /out/orderpaid /usr/local/bin/orderpaid

USER 10001:10001

# 8080: the API (HTTP_ADDR). 8081: the fakes (FAKES_ADDR).
EXPOSE 8080 8081

# The subcommand is the container's command: `docker run orderpaid:dev api`.
ENTRYPOINT ["orderpaid"]
CMD ["-h"]
