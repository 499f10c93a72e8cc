package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// startupTimeout bounds each wait for a component; both are ready in seconds.
const startupTimeout = 60 * time.Second

// waitHTTP polls url until it answers 200 with a body containing okBody, p
// exits, or timeout passes (startupTimeout when 0).
func waitHTTP(ctx context.Context, p *process, url, token, okBody string, timeout time.Duration) error {
	if timeout == 0 {
		timeout = startupTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	defer client.CloseIdleConnections()
	var last string
	for {
		if ok, err := p.exited(); ok {
			return fmt.Errorf("%s exited before ready: %v", p.name, err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), okBody) {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w (last: %s)", p.name, url, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
