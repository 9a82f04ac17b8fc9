package labpage

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// requireLocalPage lets a lab control through only from the lab page on
// this machine, or from a command line on it.
//
// Failure it prevents: a web page elsewhere pulling the lab's levers
// through a visitor's browser: switching a guard off, arming a fault,
// making the providers fail, replaying messages. requireJSON already makes
// a browser ask before it sends JSON cross-site, and the API never says
// yes; DNS rebinding gets past that. evil.example's page, its name pointed
// at 127.0.0.1 once the page has loaded, calls this process as its own
// origin. The browser still says who is calling: Host: evil.example:8080
// and Origin: http://evil.example:8080. So a control is refused (403)
// unless
//
//   - Host names this machine by loopback: localhost (or a name under
//     .localhost), 127.0.0.0/8 or ::1, on any port; and
//   - Origin, when the request carries one (a browser sends it with every
//     POST), is the lab page's own: http(s)://<the same Host>. A request
//     without Origin (curl, a script) comes from no web page, and passes.
//
// The check comes before anything is read or done: a refused control
// changes nothing.
func (p *Page) requireLocalPage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkLocalPage(r); err != nil {
			p.problem(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkLocalPage is requireLocalPage's rule: a labError (403) naming what
// is wrong and what to do, or nil.
func checkLocalPage(r *http.Request) error {
	if !loopbackHost(r.Host) {
		port := "8080"
		if _, p, err := net.SplitHostPort(r.Host); err == nil && p != "" {
			port = p
		}
		return labError{http.StatusForbidden, "Lab controls answer on this machine only", fmt.Sprintf(
			"this request names host %q: open the lab page as http://localhost:%s/lab on the machine that runs orderpaid, "+
				"or call the control there (curl http://127.0.0.1:%s/lab/...)", r.Host, port, port)}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if u, err := url.Parse(origin); err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
		return labError{http.StatusForbidden, "Lab controls answer the lab page only", fmt.Sprintf(
			"this request comes from the page of %q, not from the lab page: use the controls of http://%s/lab", origin, r.Host)}
	}
	return nil
}

// loopbackHost reports whether hostport (a Host header, with or without a
// port) names this machine by a loopback name or address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
