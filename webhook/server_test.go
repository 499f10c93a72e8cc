package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
)

// mountedSecret writes a certificate and key as kubelet projects a Secret into a Pod:
// tls.crt and tls.key are links into ..data, a link to a directory of the current files,
// swapped at once on each update, the old directory then removed.
type mountedSecret struct {
	dir  string
	n    int
	last string
}

func (m *mountedSecret) write(t *testing.T, certPEM, keyPEM []byte) {
	t.Helper()
	m.n++
	data := "..data_" + strconv.Itoa(m.n)
	if err := os.Mkdir(filepath.Join(m.dir, data), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(m.dir, data, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if m.n == 1 {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(m.dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(m.dir, "..data_tmp")
	if err := os.Symlink(data, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(m.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if m.last != "" {
		if err := os.RemoveAll(filepath.Join(m.dir, m.last)); err != nil {
			t.Fatal(err)
		}
	}
	m.last = data
}

func newCert(t *testing.T) (certPEM, keyPEM []byte, serial string) {
	t.Helper()
	c, k, err := cert.GenerateSelfSignedCertKey("nsguard-webhook.nsguard-system.svc", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := cert.ParseCertsPEM(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, k, certs[0].SerialNumber.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// served is the serial of the certificate the webhook serves, or "" while it does not.
func served(addr string) string {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return ""
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestServer: the webhook serves over TLS before its informers sync (here they never do:
// no API server answers), /readyz says so and reviews are allowed unchecked; a certificate
// kubelet swaps in is served within seconds, without a restart; SIGTERM's context makes
// /readyz fail while it goes on serving for the shutdown delay.
func TestServer(t *testing.T) {
	m := &mountedSecret{dir: t.TempDir()}
	c1, k1, serial1 := newCert(t)
	m.write(t, c1, k1)
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cfg := Config{BindAddress: "127.0.0.1", SecurePort: port, CertFile: filepath.Join(m.dir, "tls.crt"), KeyFile: filepath.Join(m.dir, "tls.key"),
		Policy: Policy{Zone: "cluster.local", Deny: true}, ShutdownDelay: 4 * time.Second}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}) }()
	defer func() { cancel(); <-done }()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c1)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(path string) (int, string) {
		res, err := client.Get("https://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if code, _ := get("/healthz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not serving /healthz on %s", addr)
		}
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("/readyz before the informers synced: %d %s", code, body)
	}
	res, err := client.Post("https://"+addr+Path, "application/json", strings.NewReader(reviewOf("CREATE", "namespaces", "", "svc", namespaceJSON("svc"))))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"allowed":true`) || strings.Contains(string(b), "warnings") {
		t.Errorf("a review before sync, under --deny: %d %s", res.StatusCode, b)
	}

	if got := served(addr); got != serial1 {
		t.Fatalf("serves certificate %s, want %s", got, serial1)
	}
	c2, k2, serial2 := newCert(t)
	swapped := time.Now()
	m.write(t, c2, k2)
	for served(addr) != serial2 {
		if time.Since(swapped) > 70*time.Second { // the files are looked at each minute, whatever the watch saw
			t.Fatalf("still serving the old certificate %v after the swap", time.Since(swapped))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the swapped certificate served %v after kubelet's swap", time.Since(swapped).Round(time.Millisecond))
	// A key that does not match: the pair is refused, the last good one stays.
	c3, _, _ := newCert(t)
	m.write(t, c3, k2)
	time.Sleep(time.Second)
	if got := served(addr); got != serial2 {
		t.Errorf("after a mismatched pair, serves %q, want the last good %s", got, serial2)
	}

	cancel()
	pool.AppendCertsFromPEM(c2)
	// Told to stop, it goes on serving through ShutdownDelay, /readyz failing: polled, since a
	// loaded machine may take a while to run the goroutine that sees ctx end.
	for deadline := time.Now().Add(cfg.ShutdownDelay / 2); ; time.Sleep(20 * time.Millisecond) {
		code, body := get("/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "shutting down") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("/readyz while shutting down: %d %s", code, body)
			break
		}
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while shutting down: %d", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the shutdown delay")
	}
}

// A bad certificate or key file stops the start with the flag's name, before anything serves.
func TestServerBadCertificate(t *testing.T) {
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(crt, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, k, _ := newCert(t)
	if err := os.WriteFile(key, k, 0o600); err != nil {
		t.Fatal(err)
	}
	err := Run(t.Context(), Config{BindAddress: "127.0.0.1", SecurePort: freePort(t), CertFile: crt, KeyFile: key}, &rest.Config{Host: "https://127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "--tls-cert-file "+crt) {
		t.Errorf("Run: %v", err)
	}
	err = Run(t.Context(), Config{BindAddress: "127.0.0.1", SecurePort: freePort(t), CertFile: filepath.Join(dir, "none"), KeyFile: key}, &rest.Config{Host: "https://127.0.0.1:1"})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Run with no certificate file: %v", err)
	}
}
