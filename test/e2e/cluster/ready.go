package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// startupTimeout bounds each wait for a component; both are ready in seconds.
const startupTimeout = 60 * time.Second

// waitHTTP polls url until it answers 200 with a body containing okBody, p
// exits, or timeout passes (startupTimeout when 0).
func waitHTTP(ctx context.Context, p *process, url, token, okBody string, timeout time.Duration) error {
	if timeout == 0 {
		timeout = startupTimeout
	}
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	defer client.CloseIdleConnections()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if ok, err := p.exited(); ok {
			return false, fmt.Errorf("%s exited before ready: %v", p.name, err)
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
				return true, nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("%s not ready at %s: %w (last: %s)", p.name, url, err, last)
	}
	return err
}
