package consumer

// The consumers' fault points, armed with --faults (internal/platform/fault):
// named places between two steps where a test or a scenario makes the step
// fail, or the process crash, on demand.
const (
	// FaultAfterMarkPaid fires in HandleOrderPaid between step 1 (order
	// paid, confirmation in the outbox) and step 2 (commission).
	FaultAfterMarkPaid = "order_paid.after_mark_paid"
	// FaultBeforeAck fires after every effect of order_paid committed,
	// before the message is acknowledged: a timeout that left the work done.
	FaultBeforeAck = "order_paid.before_ack"
	// FaultAfterProviderCall fires in HandleOrderConfirmed after the
	// notification provider answered, before the inbox row is written.
	FaultAfterProviderCall = "order_confirmed.after_provider_call"
	// FaultAfterGatewayRefund fires in HandleRefundRequested after the
	// gateway answered a refund, before its answer is recorded: a worker
	// killed between the irreversible call and its record.
	FaultAfterGatewayRefund = "refund_requested.after_gateway_refund"
)
