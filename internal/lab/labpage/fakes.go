package labpage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// fakesCall does one request to the fakes' endpoint path (FAKES_URL + path)
// with body (nil: none) and returns the answer's status and body. The page
// acts on the fakes through the same endpoints a curl line does.
func (p *Page) fakesCall(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(p.FakesURL, "/")+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("fakes request %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := p.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("fakes %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("read fakes answer to %s %s: %w", method, path, err)
	}
	return resp.StatusCode, raw, nil
}

// errFakesUnreachable is the page's answer when the fakes do not answer.
func (p *Page) errFakesUnreachable(err error) labError {
	return labError{http.StatusBadGateway, "The fakes did not answer",
		fmt.Sprintf("is `orderpaid-lab fakes` running at FAKES_URL=%s? (%v)", p.FakesURL, err)}
}

// fakesJSON gets path from the fakes and decodes it into v.
func (p *Page) fakesJSON(ctx context.Context, path string, v any) error {
	status, raw, err := p.fakesCall(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("fakes GET %s: status %d", path, status)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode fakes GET %s: %w", path, err)
	}
	return nil
}

// curlLine is the command line doing what the page just did, for the page
// to show: "curl -X POST $FAKES_URL/control/gateway ... -d '{...}'".
func curlLine(method, base, path string, body []byte) string {
	line := "curl -X " + method + " " + base + path
	if body != nil {
		line += " -H 'Content-Type: application/json' -d '" + string(body) + "'"
	}
	return line
}
