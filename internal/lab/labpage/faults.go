package labpage

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// maxLabFaultTimes bounds how many hits one arming of a fault point fires.
const maxLabFaultTimes = 100

// handleLabFault arms a fault point in error mode for the next times hits:
// the worker fails there as a crash there would leave it (what committed
// before stays, what comes after has not happened, the message is not
// acknowledged), so the broker redelivers and the guards answer. The page
// cannot kill the worker of `orderpaid-lab all` without killing itself, and it
// has no hold on a separate worker process: this is the crash the layout
// allows. Where the worker runs apart, the same points are armed at its
// start (--faults POINT=crash:1 kills it for real).
func (p *Page) handleLabFault(w http.ResponseWriter, r *http.Request) {
	point := chi.URLParam(r, "point")
	var req struct {
		Times int `json:"times"`
	}
	if err := readJSON(w, r, &req); err != nil {
		p.problem(w, r, err)
		return
	}
	faults := p.Faults
	if faults == nil || len(p.FaultPoints) == 0 {
		p.problem(w, r, labError{http.StatusConflict, "No fault points here",
			"the page arms fault points only where it shares a process with the worker (`orderpaid-lab all`); " +
				"for a separate worker, start it with ORDERPAID_DEV=1 orderpaid worker --faults POINT=error:N (or =crash:1)"})
		return
	}
	if !slices.Contains(p.FaultPoints, point) {
		p.problem(w, r, labError{http.StatusNotFound, "Unknown fault point",
			fmt.Sprintf("%q is not one of %s", point, strings.Join(p.FaultPoints, ", "))})
		return
	}
	if req.Times < 1 || req.Times > maxLabFaultTimes {
		p.problem(w, r, badRequest(fmt.Sprintf("field \"times\" must be 1 to %d, got %d", maxLabFaultTimes, req.Times)))
		return
	}
	faults.Arm(point, fault.Fail, req.Times)
	p.Logger.WarnContext(r.Context(), "fault point armed from the lab page", "point", point, "times", req.Times)
	body, _ := json.Marshal(req)
	writeJSON(w, http.StatusOK, labDone{OK: true,
		Output: fmt.Sprintf("the next %d hit(s) of %s fail as a crash there would leave them", req.Times, point),
		CLI: curlLine(http.MethodPost, "$API_URL", "/lab/faults/"+point, body) +
			fmt.Sprintf("   (or at start: orderpaid-lab all --faults %s=error:%d)", point, req.Times)})
}
