/* orderpaid.pml: the order_paid flow as a Promela model, for the Spin model
 * checker (docs/model.md). One order, from the client's payment to the
 * customer's e-mail, with every process free to crash between its steps.
 *
 * Promela in six points, for a first-time reader:
 *   - a `proctype` is a process; all of them run at once, interleaved in
 *     every possible order (Spin tries them all);
 *   - `if :: a -> x :: b -> y fi` picks ANY branch whose guard holds: that is
 *     how the model says "maybe" (maybe crash, maybe lose the answer);
 *   - a statement that is false (`bq[OC] > 0`) blocks until it becomes true;
 *   - `atomic { ... }` runs without interleaving: one transaction, one call;
 *   - `assert(x)` is an invariant: Spin reports the first run where it fails;
 *   - `#define` and `#ifdef` are C's preprocessor, run before Spin reads the file.
 *
 * Each guard of the lab (`orderpaid-lab ... --without NAME`) is a flag: with
 * -DNO_STATE_CHECK (and so on) the mistake the lab wires in replaces the guard.
 *
 * A comment `boundary: LIST` names the crash matrix's boundaries a step stands
 * for (docs/crash-matrix.md), as a clean run of the real code meets them. LIST:
 * NAMEs apart by a comma and a space, each process/work/span#n or, after the
 * first, a span#n of the process/work before it. A span holds no comma and no
 * '#'; what follows the last NAME is prose. A step only recovery runs is said in
 * words ("recovery only: ..."). model_test.go holds the NAMEs to the page's table.
 */

/* ---- bounds, and the patterns the model repeats ------------------------ */
#define MAXFAULT 1   /* crashes + lost answers + expired leases, all processes: one each run */
#define MAXREQ   2   /* payment requests of the client: the first and one retry */
/* MAYBE(x): x or nothing, Spin tries both. FAULT(x): the same while the run's one
 * fault is unspent. CRASH(label): the fault that kills the process: it jumps to its
 * recovery, `label`. CRASH opens each step's atomic block: "killed after step n" is
 * the choice made when step n+1 would run, so every moment between steps is covered. */
#define MAYBE(x)     if :: x :: true fi
#define FAULT(x)     MAYBE(faults < MAXFAULT -> faults++; x)
#define CRASH(label) FAULT(goto label)

/* ONCE(row, x): INSERT ... ON CONFLICT DO NOTHING: x only if the row is new.
 * ONCE_PER(keys, k, x): a provider idempotent on its key: x only for a key k it does
 * not hold yet (keys has a bit each), and from then on it holds k. */
#define HAS(keys, k)         (keys & (1 << (k)))
#define ADD(keys, k)         keys = keys | (1 << (k))
#define ONCE(row, x)         if :: !row -> row = true; x :: else -> skip fi
#define ONCE_PER(keys, k, x) if :: HAS(keys, k) -> skip :: else -> ADD(keys, k); x fi

/* ---- the order and its effects (the invariants count these) ----------- */
bool paid = false;   /* orders.status = 'paid' */
byte transitions;    /* times the order moved to paid (order_transitions) */
byte charges;        /* charges the gateway made (its /charges) */
byte commissions;    /* commission rows in the ledger */
byte emails;         /* e-mails the provider sent (its /notifications) */
byte accepted[2];    /* order_paid written to the outbox, per payment event */
byte faults;         /* MAXFAULT's counter */

/* ---- the api's tables, and the gateway --------------------------------- */
#define NONE 0
#define CHARGING 1     /* order_charges.state; for a key: locked */
#define CHARGED 2      /* for a key: completed, its answer stored */
byte keyrow[3];        /* idempotency_keys by client key K1 = 1, K2 = 2 */
byte charge = NONE;    /* order_charges: the order's one charge claim */
byte whinbox;          /* webhook_inbox: bit per event id */
byte gwkeys;           /* the keys the gateway remembers, a bit each */
#define CHARGEKEY 0    /* payment.ChargeKey(order, attempt 1); with no charge claim GatewayKey(K) is K, with no key 3 + request */

/* ---- outbox, broker, workers' tables, the notification provider ------- */
#define OP1 0          /* order_paid of event 1: UUIDv5 of its source */
#define OP2 1          /* order_paid of a second event for the same payment */
#define OC 2           /* order_confirmed: UUIDv5 of the order */
byte ob[3];            /* outbox rows not yet relayed, per message id */
byte bq[3];            /* copies in the broker, not yet acked, per message id */
bool ever[3];          /* published at least once (an operator can replay it) */
bool ledgerrow;        /* ledger row under the business key (order, commission) */
byte ledgerbymsg;      /* the mistake: rows keyed by the delivery, bit per message */
bool inbox;            /* consumer_inbox (order_confirmed, OC) */
byte claim = NONE;     /* notification_claims (order, order_confirmed): NONE, CHARGING = sending, CHARGED = sent */
byte npkeys;           /* the Idempotency-Keys the provider remembers, a bit each; the claim's key is bit 0 */
byte lastkey;          /* the key of the provider's last send */
bool window;           /* a look-up and the send after it: milliseconds, no day passes */

/* ===== the client and the api: POST /orders/{id}/payments =============== */
proctype Client() {
  byte r = 0, k = 1, gk;  /* request number, client key (K1 = 1, K2 = 2), gateway key */
  bool unknown;
request:
#ifdef NO_IDEMPOTENCY_KEY
  gk = 3 + r; goto call;  /* PayWithoutKey: a fresh gateway key, no claim at all */
#endif
  atomic {  /* phase 1, one transaction; boundary: api/orders_payments/BEGIN#1, OrderGet#1, IdempotencyKeyInsert#1 */
    if
    :: keyrow[k] == CHARGED -> goto answered   /* a retry only: IdempotencyKeyGet, the stored answer */
    :: else -> keyrow[k] = CHARGING            /* new, or recovered after its lock ran out (recovery only: IdempotencyKeyRecover) */
    fi;
#ifdef NO_CHARGE_CLAIM
    gk = k                /* NoChargeClaim: the gateway key from the request's key */
#else
    if                    /* boundary: api/orders_payments/OrderChargeInsert#1 */
    :: paid || charge == CHARGED -> keyrow[k] = CHARGED; goto answered  /* alreadyPaid: 409, stored */
    :: charge == NONE -> charge = CHARGING
    :: charge == CHARGING -> unknown = true   /* recovery only: OrderChargeTakeOver */
    fi;
    gk = CHARGEKEY
#endif
  };                      /* boundary: api/orders_payments/COMMIT#1: the key and the charge now locked */
call:
  atomic {
    CRASH(gone);          /* payment.before_gateway_call: the key and the charge stay locked */
#ifndef NO_ASK_FIRST      /* askFirst; recovery only: the look-up, GET /charges?order_id= */
    if :: unknown && charges > 0 -> charge = CHARGED; keyrow[k] = CHARGED; goto answered :: else -> skip fi;
#endif
    ONCE_PER(gwkeys, gk, charges++; assert(charges <= 1));  /* boundary: api/orders_payments/POST /charges#1; INVARIANT one charge */
#ifndef NO_IDEMPOTENCY_KEY
    FAULT(goto gone)      /* its answer is lost (a 502, a timeout); a lost answer only: OrderChargeRelease, IdempotencyKeyRelease */
#endif
  };
#ifndef NO_IDEMPOTENCY_KEY
  atomic {                /* boundary: api/orders_payments/BEGIN#2, GatewayChargeCallInsert#1, OrderChargeSettle#1, IdempotencyKeyComplete#1, COMMIT#2 */
    CRASH(gone);          /* payment.after_gateway_call, the cell POST /charges#1:after: charged, nothing stored, rows left charging */
    charge = CHARGED; keyrow[k] = CHARGED
  };
#endif
answered:                 /* boundary: api/orders_payments/end#1: the answer next; the client may still time out before it reads it */
gone:                     /* no answer: the client retries, same key or a new one, or gives up */
  atomic { r++; unknown = false; gk = 0; MAYBE(r < MAXREQ -> if :: k = 1 :: k = 2 fi; goto request) }
}

/* ===== the gateway's payment.succeeded: at least once, maybe late ======== */
proctype Webhook() {
  byte sent = 0, ev = 0, m = OP1;
  bool fresh;
end:
  charges > 0;            /* it sends nothing before it has charged */
deliver:
  atomic {                /* boundary: api/webhooks_payments/OrderGet#1, BEGIN#1, WebhookInboxInsert#1 */
    /* no CRASH: the api dying before the COMMIT writes nothing, and the gateway's next delivery is its retry */
#ifdef NO_WEBHOOK_INBOX
    fresh = true;
#else
    fresh = !HAS(whinbox, ev); ADD(whinbox, ev);  /* a new event id? */
#endif
    if
    :: fresh -> charge = CHARGED;  /* boundary: api/webhooks_payments/OrderChargeRecordFromEvent#1 */
       ob[m]++;                    /* boundary: api/webhooks_payments/outbox_write order_paid#1, INSERT#1 (watermill's outbox row) */
       accepted[ev]++;
       assert(accepted[ev] <= 1)   /* INVARIANT one acceptance per event */
    :: else -> skip
    fi;
    fresh = false;
    sent++;               /* boundary: api/webhooks_payments/COMMIT#1, end#1: a crash after the COMMIT loses the 2xx: it is sent again, below */
    if                    /* two deliveries at most: */
    :: sent < 2 -> goto deliver                 /* the same event again, same event id */
    :: sent < 2 -> ev = 1; m = OP2; goto deliver /* a second event for the same payment */
    :: true
    fi
  }
}

/* ===== the outbox relay: publishes each row at least once =============== */
proctype Relay() {
  byte m;
end:
  atomic {                /* watermill reads the outbox: not a crash matrix boundary, the work begins */
    if :: ob[OP1] > 0 -> m = OP1 :: ob[OP2] > 0 -> m = OP2 :: ob[OC] > 0 -> m = OC fi;
    bq[m]++; ever[m] = true   /* boundary: worker/relay_order_paid/INSERT#1, worker/relay_order_confirmed/INSERT#1 (the publish: watermill's INSERT into the postgres broker's table) */
  };
  /* boundary: worker/relay_order_paid/end#1, worker/relay_order_confirmed/end#1 (the relay's position) */
  atomic { CRASH(end); ob[m]--; m = 0 };  /* killed before its position moves: the row is published again */
  goto end
}

/* ===== two order_paid workers =========================================== */
proctype OrderPaid() {
  byte m;
  bool held;
end:
  atomic {                /* a delivery: not a crash matrix boundary, the work begins */
    if :: bq[OP1] > 0 -> m = OP1 :: bq[OP2] > 0 -> m = OP2 fi; bq[m]--;
    FAULT(bq[m]++)        /* its lease runs out while it works: the broker hands the message to another */
  };
  atomic {                /* step 1, one transaction: markPaid (a crash inside it rolls it back) */
    CRASH(crashed);
    if                    /* boundary: worker/order_paid/BEGIN#1, OrderMarkPaid#1: UPDATE ... WHERE status = 'pending' */
#if defined(NO_STATE_CHECK) && !defined(REFUND)
    :: true ->            /* the mistake's query in its place: OrderMarkPaidUnconditional */
#else
    :: !paid ->
#endif
       paid = true; transitions++;             /* boundary: worker/order_paid/OrderTransitionInsert#1 */
       assert(transitions <= 1);               /* INVARIANT paid once */
#ifdef NO_OUTBOX
       held = true        /* PublishAfterCommit: held, to be sent once this commits */
#else
       ob[OC]++           /* boundary: worker/order_paid/outbox_write order_confirmed#1, INSERT#1 (the confirmation, same transaction) */
#endif
    :: else -> skip
    fi
  };                      /* boundary: worker/order_paid/COMMIT#1 */
#ifdef NO_OUTBOX
  atomic {                /* the mistake: published after the COMMIT (no boundary of a clean run) */
    CRASH(crashed);       /* order_paid.after_mark_paid: the held confirmation dies with the worker */
    if :: held -> bq[OC]++; ever[OC] = true; held = false :: else -> skip fi
  };
#endif
  atomic {                /* step 2, one transaction; boundary: worker/order_paid/BEGIN#2, OrderLockForCommission#1 */
    CRASH(crashed);       /* order_paid.after_mark_paid */
#if defined(NO_LEDGER_KEY) && !defined(REFUND)
    if :: !HAS(ledgerbymsg, m) -> ADD(ledgerbymsg, m); commissions++ :: else -> skip fi;  /* ReleaseCommissionUnguarded: keyed by the delivery */
#else
    ONCE(ledgerrow, commissions++);           /* boundary: worker/order_paid/LedgerEntryInsert#1 (entry_key) */
#endif
    assert(commissions <= 1)   /* INVARIANT one commission */
  };                      /* boundary: worker/order_paid/COMMIT#2 */
  /* boundary: worker/order_paid/ExecutionInsert#1, end#1: the broker's ack next */
  atomic { CRASH(crashed); m = 0; held = false; goto end };  /* order_paid.before_ack */
crashed: atomic { bq[m]++; m = 0; held = false; goto end }  /* killed: the broker delivers the message again */
}

/* ===== the order_confirmed consumer: inbox, e-mail claim, provider key ==== */
proctype Confirmed() {
  bool unknown;
  byte key, fresh = 1;
end:
  atomic {                /* boundary: worker/order_confirmed/ConsumerInboxExists#1 */
    bq[OC] > 0 -> bq[OC]--;
#ifndef NO_INBOX
    if :: inbox -> goto ack :: else -> skip fi;
#endif
    assert(!inbox);       /* INVARIANT once per message: no delivery past an inbox that holds it */
    assert(paid)          /* INVARIANT no ghost: a confirmation only for a paid order */
  };
#if !defined(NO_NOTIFICATION_CLAIM) || defined(REFUND)
  atomic {                /* boundary: worker/order_confirmed/NotificationClaimInsert#1 */
    CRASH(crashed);
    if
    :: claim == CHARGED -> goto record          /* sent: nothing to do */
    :: claim == NONE -> claim = CHARGING
    :: claim == CHARGING -> unknown = true      /* abandoned; recovery only: NotificationClaimTakeOver */
    fi;
    /* a crash between the claim and the look-up is the crash before the send, below */
    if                    /* ask first; recovery only: the look-up, GET /notifications?order_id= */
    :: !unknown -> skip
    :: unknown && emails > 0 -> goto settle     /* it sent it: settle, send nothing */
    :: unknown && emails > 0 && HAS(npkeys, lastkey) -> window = true  /* its search lags a recent send */
    :: unknown && emails == 0 -> window = true
    fi
  };
#endif
  atomic {                /* boundary: worker/order_confirmed/POST /notifications#1 */
    CRASH(crashed);
#ifdef NO_PROVIDER_KEY
    key = fresh; fresh++; /* FreshKey: a new key per call */
#else
    key = 0;              /* MessageKey(the claim's first message): one key per e-mail */
#endif
    window = false;
    ONCE_PER(npkeys, key, emails++; lastkey = key; assert(emails <= 1));  /* INVARIANT one e-mail */
    key = 0;
    FAULT(goto crashed)   /* sent, its answer lost: the claim given back (a lost answer only: NotificationClaimRelease) */
  };
#if !defined(NO_NOTIFICATION_CLAIM) || defined(REFUND)
settle: atomic { CRASH(crashed); claim = CHARGED };  /* boundary: worker/order_confirmed/NotificationLogInsert#1, NotificationClaimSettle#1 */
#endif
record: atomic { CRASH(crashed); inbox = true };     /* boundary: worker/order_confirmed/ConsumerInboxInsert#1 */
ack:    atomic { CRASH(crashed); unknown = false; goto end };  /* boundary: worker/order_confirmed/ExecutionInsert#1, end#1: the ack next */
crashed: atomic { window = false; bq[OC]++; unknown = false; goto end }  /* killed, or its answer lost: delivered again */
}

/* ===== time: what a week later does, and an operator ==================== */
proctype Later() {
end1:
  atomic {                /* a week passes: every memory that expires has expired */
    !window ->            /* (not between a look-up and its send: those are milliseconds apart) */
    gwkeys = 0; npkeys = 0;  /* the gateway and the provider forget their keys (about a day) */
    inbox = false         /* retention cleans the consumer inbox (7 days); claims are never cleaned */
  };
end2:                     /* an operator replays an old message (orderpaid reprocess --message) */
  if :: ever[OC] -> bq[OC]++ :: ever[OP1] -> bq[OP1]++ fi
}

#ifdef REFUND
#include "refund.pml"   /* the refund's processes: Refund, Refunded */
#endif

init {                    /* -DREFUND: one order_paid worker, no week passing (the payment is checked whole without it) */
  atomic { run Client(); run Webhook(); run Relay(); run OrderPaid();
#ifdef REFUND
           run Confirmed(); run Refund(); run Refunded()
#else
           run OrderPaid(); run Confirmed(); run Later()
#endif
  }
}

#ifdef LIVENESS
/* INVARIANT no lost e-mail: once paid, the order is eventually e-mailed (pan -a -f: weak fairness, a process that can move, moves) */
ltl emailed { [] (paid -> <> (emails > 0)) }
#endif
