package reprocess

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/messages"
)

// Action is what a replay does with one message.
type Action string

// Actions.
const (
	// Replay: younger than the window; the inbox still remembers it.
	Replay Action = "replay"
	// ReplayPastWindow: older than the window, but every effect of its topic
	// is guarded by rows that never expire (state check, ledger key).
	ReplayPastWindow Action = "replay (past the window: the state check and the ledger key still guard it)"
	// Refused: older than the window, and its effect is guarded by what
	// forgets (inbox, provider key). Force overrides.
	Refused Action = "REFUSED: older than the inbox retention window; the e-mail could go out twice (--force after checking the provider's log)"
	// Forced: what Refused becomes with Force.
	Forced Action = "replay (FORCED past the window)"
)

// Item is one message a replay would send.
type Item struct {
	Topic     string
	MessageID string
	OrderID   string
	// Age is how long ago the message (or the order's payment) first
	// happened; zero when unknown.
	Age    time.Duration
	Action Action

	msg      *message.Message
	poisonID int64 // set for a poison queue message
}

// Sends reports whether the item will be sent.
func (it Item) Sends() bool { return it.Action != Refused }

// decide sets the item's action from its topic, its age and opts.
func decide(it Item, opts Options) Item {
	switch {
	case it.Age <= opts.window():
		it.Action = Replay
	case it.Topic != messages.TopicOrderConfirmed:
		it.Action = ReplayPastWindow
	case opts.Force:
		it.Action = Forced
	default:
		it.Action = Refused
	}
	return it
}

func newItem(topic string, msg *message.Message, age time.Duration, opts Options) Item {
	return decide(Item{Topic: topic, MessageID: msg.UUID, OrderID: msg.Metadata.Get(messages.MetadataOrderID), Age: age, msg: msg}, opts)
}

// printPlan writes the items as a table, and the dry-run notice.
func printPlan(w io.Writer, items []Item, opts Options) {
	if len(items) == 0 {
		fmt.Fprintln(w, "nothing to replay")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tMESSAGE\tORDER\tAGE\tACTION")
	for _, it := range items {
		order := it.OrderID
		if order == "" {
			order = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Topic, it.MessageID, order, age(it.Age), it.Action)
	}
	tw.Flush()
	fmt.Fprintf(w, "inbox retention window: %s\n", opts.window())
	if opts.DryRun {
		fmt.Fprintln(w, "dry run: nothing written")
	}
}

func age(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}
