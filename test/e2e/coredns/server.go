package coredns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Server is a CoreDNS process serving one Corefile.
type Server struct {
	IP       string // the loopback address it binds, port 53
	Corefile string // path of the Corefile; rewrite it to reload with the reload plugin
	Metrics  string // host:port of the prometheus plugin, if the Corefile has one

	cmd   *exec.Cmd
	log   *syncBuffer
	done  chan struct{}
	once  sync.Once
	ips   []string      // every address bound on port 53, checked free after the stop
	grace time.Duration // between SIGTERM and SIGKILL at Stop; 0 kills at once
}

// Start writes corefile into dir and runs bin on it. It refuses to start when ip:53 is
// taken, and returns once the server answers a query for probe on ip:53.
func Start(ctx context.Context, bin, dir, ip, corefile, metrics, probe string) (*Server, error) {
	return StartWithEnv(ctx, bin, dir, ip, corefile, metrics, probe, nil)
}

// StartWithEnv is Start with environment variables added to the process's, such as
// GOMEMLIMIT.
func StartWithEnv(ctx context.Context, bin, dir, ip, corefile, metrics, probe string, env []string) (*Server, error) {
	return StartWith(ctx, bin, dir, ip, corefile, metrics, probe, env, nil)
}

// StartWith is StartWithEnv with flags added after -conf, such as -log-format json.
func StartWith(ctx context.Context, bin, dir, ip, corefile, metrics, probe string, env, flags []string) (*Server, error) {
	if err := CheckPortFree(ip); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		return nil, err
	}
	s := &Server{IP: ip, Corefile: path, Metrics: metrics, ips: []string{ip}, grace: 5 * time.Second}
	s.cmd = exec.Command(bin, append([]string{"-conf", path}, flags...)...)
	s.cmd.Dir = dir
	if len(env) > 0 {
		s.cmd.Env = append(os.Environ(), env...)
	}
	return s.run(ctx, probe)
}

// run starts s.cmd and waits until the server answers probe.
func (s *Server) run(ctx context.Context, probe string) (*Server, error) {
	s.log, s.done = &syncBuffer{}, make(chan struct{})
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	track(s)
	go func() { s.cmd.Wait(); close(s.done) }()

	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case <-s.done:
			untrack(s)
			return false, fmt.Errorf("coredns exited at start:\n%s", s.Log())
		default:
		}
		_, err := s.Exchange(probe, dns.TypeSOA)
		return err == nil, nil
	})
	if wait.Interrupted(err) {
		s.Stop()
		return nil, fmt.Errorf("coredns did not answer on %s:53 within 30s:\n%s", s.IP, s.Log())
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Exchange asks the server one question over UDP.
func (s *Server) Exchange(name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: 2 * time.Second}
	res, _, err := c.Exchange(m, s.IP+":53")
	return res, err
}

// Log is everything the server printed so far.
func (s *Server) Log() string { return s.log.String() }

// Reload replaces the Corefile; a Corefile with the reload plugin picks it up.
func (s *Server) Reload(corefile string) error {
	return os.WriteFile(s.Corefile, []byte(corefile), 0o644)
}

// Scrape returns the prometheus plugin's /metrics page.
func (s *Server) Scrape() (string, error) {
	if s.Metrics == "" {
		return "", fmt.Errorf("no metrics address for this server")
	}
	res, err := http.Get("http://" + s.Metrics + "/metrics")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		// Not the metrics page: counting in it would read every metric as 0.
		err = fmt.Errorf("scraping %s/metrics: %s: %.200s", s.Metrics, res.Status, b)
	}
	return string(b), err
}

// CPUTime is the user and system CPU time the process has used so far, from /proc.
func (s *Server) CPUTime() (time.Duration, error) { return cpuTime(s.cmd.Process.Pid) }

// Stop ends the process by its PID (SIGTERM, then SIGKILL after a grace period; at once for a
// server started in a pod, whose lameduck would only make the test wait), waits for it, and
// checks that port 53 is free again on every address it bound.
func (s *Server) Stop() error {
	var err error
	s.once.Do(func() {
		if s.grace > 0 {
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(s.grace):
			}
		}
		select {
		case <-s.done: // reaped: its PID may be another's by now
		default:
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
		untrack(s)
		var errs []error
		for _, ip := range s.ips {
			errs = append(errs, waitPortFree(ip))
		}
		err = errors.Join(errs...)
	})
	return err
}

// waitPortFree waits up to 5 s for ip's port 53 to be free, and returns the last check's error.
func waitPortFree(ip string) error {
	var err error
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		err = CheckPortFree(ip)
		return err == nil, nil
	})
	return err
}

// syncBuffer is a bytes.Buffer safe for the process's writers and the test's readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Signal sends sig to the CoreDNS process; SIGUSR1 makes it reload its Corefile.
func (s *Server) Signal(sig syscall.Signal) error { return s.cmd.Process.Signal(sig) }
