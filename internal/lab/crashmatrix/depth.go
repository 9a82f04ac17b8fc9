package crashmatrix

import (
	"errors"
	"slices"
	"strings"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// Depth two: a second crash during the recovery of the first. A cell's
// record marks where its process was restarted (restarted), so the
// boundaries its recovery met can be read (Recovery); each of them, each
// side, is a second crash (Pairs), which restart arms in the restarted
// process (Cell.Then).

// Pair is the cell in words with its second crash, if any:
// "worker/order_paid/COMMIT#1:after, then worker/order_paid/OrderMarkPaid#1:before".
func (c Cell) Pair() string {
	if c.Then == "" {
		return c.String()
	}
	return c.String() + ", then " + c.Then
}

func thenSummary(c Cell) string {
	if c.Then == "" {
		return ""
	}
	return ", restarted, and dies again at " + c.Then
}

// restarted marks, in a cell's record, where the restarted process starts.
const restarted = "@@ restarted"

// Recovery reads the boundaries of process and flow that a cell's record
// (its --boundaries file) has after its process was restarted and before
// the end of its recovery: what the recovery met, each once, in order. At
// depth two a second crash falls on one of them.
func Recovery(path, process, flow string) []string {
	lines, _ := readLines(path)
	var out []string
	after := false
	for _, l := range lines {
		switch {
		case l == restarted:
			after = true
		case l == endOfRecovery:
			return out
		case after && !strings.HasPrefix(l, "@") && strings.HasPrefix(l, process+"/") && flowOf(l) == flow && !slices.Contains(out, l):
			out = append(out, l)
		}
	}
	return out
}

// Pairs are the depth-two cells of outcomes: each depth-one cell of the
// flows named, with a second crash at each side of each boundary its
// recovery met (Outcome.Recovery).
func Pairs(outcomes []Outcome, flows ...string) []Cell {
	var out []Cell
	for _, o := range outcomes {
		if o.Cell.Then != "" || o.Cell.Side == fault.Lost || !slices.Contains(flows, o.Cell.Flow()) {
			continue
		}
		for _, second := range Cells(o.Recovery) {
			out = append(out, Cell{Boundary: o.Cell.Boundary, Side: o.Cell.Side, Then: second.String()})
		}
	}
	return out
}

// DepthTwoFlows are the flows whose recoveries the matrix crashes in again
// at depth two: the payment and order_paid.
var DepthTwoFlows = []string{"payment", "order_paid"}

// ErrSecondNotReached is a depth-two cell whose restarted process did not
// meet its second boundary this time (the recovery took another path, as
// timing may make it): the pair proves nothing and is counted apart.
var ErrSecondNotReached = errors.New("the second boundary was never reached")
