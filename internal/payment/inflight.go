package payment

// How long a charge may be in flight, for what must wait it out before it
// acts on an order (orderpaid reconcile's --grace).

// GatewayTimeout bounds one gateway call of the api: the timeout of
// NewGatewayClient's default client (defaultGatewayTimeout), under the name
// other packages read.
const GatewayTimeout = defaultGatewayTimeout

// MaxChargeInFlight is how long, with the defaults, an api request may still
// be working on an order's charge: its lease (DefaultLockTimeout), and then a
// gateway call begun as the lease ran out, which answers within
// GatewayTimeout. Work quiet for less than this may still be in flight;
// orderpaid reconcile takes no --grace shorter than it.
const MaxChargeInFlight = DefaultLockTimeout + GatewayTimeout
