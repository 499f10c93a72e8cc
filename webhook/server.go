package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Config is how the webhook runs. The CLI fills it from flags named as Kubernetes
// components name theirs.
type Config struct {
	BindAddress string // --bind-address
	SecurePort  int    // --secure-port
	CertFile    string // --tls-cert-file
	KeyFile     string // --tls-private-key-file
	Policy      Policy
	// ShutdownDelay is how long, once told to stop, the webhook goes on serving while
	// /readyz fails, so that the API server stops sending it reviews first.
	ShutdownDelay time.Duration
}

// Path is where the webhook takes AdmissionReviews.
const Path = "/validate"

// Run serves the webhook until ctx ends: metadata-only informers of Namespaces and Services
// through rc, and HTTPS on BindAddress:SecurePort with the certificate files, reloaded when
// they change. /healthz answers while the process serves, /readyz once the informers synced.
func Run(ctx context.Context, cfg Config, rc *rest.Config) error {
	// dynamiccertificates: the reload kube-apiserver itself does for --tls-cert-file (a
	// watch of the files and a look every minute; a pair that does not match keeps the old).
	cert, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file %s, --tls-private-key-file %s: %w", cfg.CertFile, cfg.KeyFile, err)
	}
	tlsCtl := dynamiccertificates.NewDynamicServingCertificateController(
		&tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}, nil, cert, nil, nil)
	cert.AddListener(tlsCtl)
	if err := tlsCtl.RunOnce(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort)))
	if err != nil {
		return err
	}
	defer ln.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go cert.Run(ctx, 1)
	go tlsCtl.Run(1, ctx.Done())

	client, err := metadata.NewForConfig(rc)
	if err != nil {
		return err
	}
	index, err := StartIndex(ctx, client)
	if err != nil {
		return err
	}
	go logSynced(ctx, index)

	var stopping atomic.Bool
	mux := http.NewServeMux()
	mux.Handle(Path, &Handler{View: index, Policy: cfg.Policy})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case stopping.Load():
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
		case !index.Synced():
			http.Error(w, "informers of namespaces and services not synced", http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	})
	srv := &http.Server{
		Handler:   mux,
		TLSConfig: &tls.Config{GetConfigForClient: tlsCtl.GetConfigForClient},
		// The API server gives up after the webhook's timeoutSeconds; these only bound
		// clients that are not the API server.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          klog.NewStandardLogger("WARNING"),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	klog.InfoS("Serving admission reviews", "address", ln.Addr().String(), "path", Path,
		"zone", cfg.Policy.Zone, "deny", cfg.Policy.Deny)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopping.Store(true)
	if cfg.ShutdownDelay > 0 {
		klog.InfoS("Shutting down: /readyz fails, still serving", "for", cfg.ShutdownDelay)
		time.Sleep(cfg.ShutdownDelay)
	}
	shut, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// logSynced says when the informers have synced, with what they hold.
func logSynced(ctx context.Context, index *Index) {
	start := time.Now()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !index.Synced() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if d := time.Since(start); d > time.Minute && d%time.Minute < 100*time.Millisecond {
			klog.InfoS("Informers not synced yet: reviews are allowed unchecked", "after", d.Round(time.Second))
		}
	}
	ns, svc := index.Len()
	klog.InfoS("Informers synced: ready", "after", time.Since(start).Round(time.Millisecond), "namespaces", ns, "services", svc)
}
