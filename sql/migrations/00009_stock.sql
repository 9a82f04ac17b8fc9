-- +goose Up

-- A scarce resource: units of a SKU, reserved once per paid order
-- (internal/stock). available is what is left to sell; PUT /stock/{sku} sets
-- it to an absolute value (a set, so the admin call is itself idempotent).
-- The CHECK is the last line, not the guard: the guard is the conditional
-- decrement, which never tries to go below 0.
CREATE TABLE stock (
    sku        text        PRIMARY KEY CHECK (sku ~ '^[A-Za-z0-9_-]{1,64}$'),
    available  integer     NOT NULL CHECK (available >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- What an order asked for, written with the order.
CREATE TABLE order_items (
    order_id uuid    NOT NULL REFERENCES orders (id),
    sku      text    NOT NULL REFERENCES stock (sku),
    quantity integer NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    PRIMARY KEY (order_id, sku)
);

-- The guard: one reservation row per (order, SKU), under its primary key,
-- written in the same transaction as the decrement it stands for. A
-- redelivery meets the row and leaves the counter alone. released_at is set
-- once, when the reservation is given back (a refund).
CREATE TABLE stock_reservations (
    order_id    uuid        NOT NULL REFERENCES orders (id),
    sku         text        NOT NULL REFERENCES stock (sku),
    quantity    integer     NOT NULL CHECK (quantity > 0),
    reserved_at timestamptz NOT NULL DEFAULT now(),
    released_at timestamptz,
    PRIMARY KEY (order_id, sku)
);
CREATE INDEX stock_reservations_sku_idx ON stock_reservations (sku) WHERE released_at IS NULL;

-- Every time an order's items really left (reserve) or came back to
-- (release) the counter, written in the same transaction as the change: the
-- audit's stock_reserved and stock_released. With the guard in place each is
-- 0 or 1 per order; the naive counter writes one per delivery.
CREATE TABLE stock_movements (
    id         bigserial   PRIMARY KEY,
    order_id   uuid        NOT NULL REFERENCES orders (id),
    kind       text        NOT NULL CHECK (kind IN ('reserve', 'release')),
    message_id text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stock_movements_order_idx ON stock_movements (order_id);

-- +goose Down
DROP TABLE stock_movements;
DROP TABLE stock_reservations;
DROP TABLE order_items;
DROP TABLE stock;
