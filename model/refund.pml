/* refund.pml: the refund, included by orderpaid.pml in its -DREFUND build.
 * It uses orderpaid.pml's names (CRASH, FAULT, ONCE, emails); read that file first. */

/* ===== the refund (-DREFUND): asked once, made once, compensated once ===== */
/* Once the payment has run its course (the e-mail sent), the customer asks
 * for the refund. The intent row is the order's one (refund_requests,
 * primary key); the gateway refunds under a key from the order
 * (payment.RefundKey); refund_requested marks the order refunded under the
 * state check, gives the stock back and reverses the commission under its
 * own ledger key, in one transaction with the notice's message; the
 * refund's webhook (payment.refunded) reaches order_refunded, which tries
 * the same, and answers already_applied. */
bool refundrow, refunded, reversalrow, rgwkey, nclaim;
byte rq;               /* refund_requested copies in the broker (relayed at least once) */
byte rc;               /* refund_confirmed copies in the broker */
byte refunds, refundedT, reversals, notices;

inline markRefunded() {
#ifdef NO_STATE_CHECK
  if :: true ->        /* MarkRefundedUnguarded */
#else
  if :: !refunded ->   /* boundary: worker/refund_requested/OrderMarkRefunded#1: WHERE status IN ('pending','paid','refund_failed') */
#endif
     refunded = true; refundedT++; assert(refundedT <= 1)    /* INVARIANT refunded once */
  :: else -> skip
  fi;
#ifdef NO_LEDGER_KEY
  reversals++;         /* ReverseCommissionUnguarded: keyed by the delivery */
#else
  ONCE(reversalrow, reversals++);  /* boundary: worker/refund_requested/LedgerReversalInsert#1 */
#endif
  assert(reversals <= 1)                                     /* INVARIANT one reversal */
}

proctype Refund() {
  byte asks = 0;
end_wait:
  emails > 0;             /* the payment has run its course (it may never: a valid end) */
ask:
  atomic {                /* boundary: api/orders_refunds/BEGIN#1, OrderGetForUpdate#1, RefundRequestGet#1, RefundRequestInsert#1, outbox_write refund_requested#1, INSERT#1, COMMIT#1 */
    CRASH(again);         /* the api dies before the COMMIT: nothing written, the customer asks again */
    ONCE(refundrow, rq++);  /* one intent per order, however often asked */
    asks++
  };
  atomic { FAULT(rq++) }; /* the relay may publish it twice; boundary: worker/relay_refund_requested/INSERT#1, end#1 */
request:
  atomic {                /* a delivery of refund_requested; boundary: worker/refund_requested/OrderGet#1, OrderChargeID#1, GET /refunds#1, POST /refunds#1 */
    rq > 0 -> rq--;
    CRASH(redeliver);
    if :: rgwkey -> skip :: else -> refunds++; rgwkey = true; assert(refunds <= 1) fi  /* the key from the order; INVARIANT one refund */
  };
  atomic {                /* boundary: worker/refund_requested/GatewayRefundCallInsert#1, BEGIN#1, COMMIT#1 */
    CRASH(redeliver);     /* consumer.after_gateway_refund */
    markRefunded();
    rc++                  /* the notice's message, same transaction; boundary: worker/refund_requested/outbox_write refund_confirmed#1 */
  };
  /* boundary: worker/refund_requested/ExecutionInsert#1, end#1: the ack next; redelivered, the gateway's key
   * answers, the state check and the ledger key too, and the notice is enqueued again (same message id) */
  atomic { CRASH(redeliver) };
end_notice:
  atomic {                /* the notice, each copy; boundary: worker/relay_refund_confirmed/INSERT#1, worker/refund_confirmed/ConsumerInboxExists#1, NotificationClaimInsert#1, POST /notifications#1 */
    rc > 0 -> rc--;
#ifdef NO_NOTIFICATION_CLAIM
    notices++;
#else
    ONCE(nclaim, notices++);
#endif
    assert(notices <= 1); /* INVARIANT one refund notice */
    goto end_notice
  };
  goto done;
redeliver:
  atomic { rq++; goto request };
again:
  atomic { if :: asks < 2 -> goto ask :: else -> skip fi };
done:
  skip
}

/* the refund's webhook, payment.refunded, reaches order_refunded once the
 * gateway has refunded: the same state check answers already_applied */
proctype Refunded() {
end:
  refunds > 0;
  atomic {                /* boundary: api/webhooks_payments/outbox_write order_refunded#1, worker/relay_order_refunded/INSERT#1, worker/order_refunded/BEGIN#1, OrderMarkRefunded#1, COMMIT#1 */
    markRefunded()
  }
}
