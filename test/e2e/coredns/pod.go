package coredns

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// PodEnv is what CoreDNS finds in its pod: the service account kubelet mounts, the
// resolv.conf of dnsPolicy Default, and the API server's address in the environment. With it
// the kubernetes plugin, and nsguard, use client-go's in-cluster configuration, as in a cluster.
type PodEnv struct {
	Token, CA     []byte // the service account's token and the API server's CA bundle
	Namespace     string // the pod's namespace
	APIServerPort int    // KUBERNETES_SERVICE_PORT; KUBERNETES_SERVICE_HOST is 127.0.0.1
	ResolvConf    string // mounted over /etc/resolv.conf: what "forward . /etc/resolv.conf" reads
}

// InPod is one CoreDNS to run as in a pod.
type InPod struct {
	IPs      []string // the addresses its Corefile binds, port 53; the first is probed
	Corefile string
	Metrics  string // host:port of its prometheus plugin
	Ready    string // host:port of its ready plugin; empty when the Corefile has none
	Probe    string // a name it answers once started
	Env      PodEnv
}

// serviceAccountDir is where client-go's in-cluster configuration reads the token and CA
// (it names /var/run/..., which is /run/... on Debian).
const serviceAccountDir = "/run/secrets/kubernetes.io/serviceaccount"

// podScript gives CoreDNS a private mount namespace: a tmpfs over /run holding the service
// account ($1 holds its files), and $2 over /etc/resolv.conf. The host sees none of it.
const podScript = `set -e
mount --make-rprivate /
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p ` + serviceAccountDir + `
cp "$1/token" "$1/ca.crt" "$1/namespace" ` + serviceAccountDir + `/
resolv=$(readlink -f /etc/resolv.conf) # a link into /run points into the tmpfs now
[ -e "$resolv" ] || { mkdir -p "$(dirname "$resolv")" && : >"$resolv"; }
mount --bind "$2" "$resolv"
shift 2
exec "$@"`

// StartInPod writes p.Corefile into dir and runs bin on it as in a pod (see PodEnv). It
// refuses to start when any of p.IPs:53 is taken, and returns once the server answers p.Probe
// and, when there is a ready plugin, reports ready. Stop kills it at once: its health plugin's
// lameduck would only make the test wait.
func StartInPod(ctx context.Context, bin, dir string, p InPod) (*Server, error) {
	if len(p.IPs) == 0 {
		return nil, errors.New("no address to bind")
	}
	if err := checkRunLayout(); err != nil {
		return nil, err
	}
	for _, ip := range p.IPs {
		if err := CheckPortFree(ip); err != nil {
			return nil, err
		}
	}
	sa := filepath.Join(dir, "serviceaccount")
	if err := os.MkdirAll(sa, 0o700); err != nil {
		return nil, err
	}
	files := map[string][]byte{"token": p.Env.Token, "ca.crt": p.Env.CA, "namespace": []byte(p.Env.Namespace)}
	for name, b := range files {
		if len(b) == 0 {
			return nil, fmt.Errorf("pod environment without %s", name)
		}
		if err := os.WriteFile(filepath.Join(sa, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(path, []byte(p.Corefile), 0o644); err != nil {
		return nil, err
	}
	s := &Server{IP: p.IPs[0], Corefile: path, Metrics: p.Metrics, ips: p.IPs}
	s.cmd = exec.Command("unshare", "-m", "sh", "-c", podScript, "sh", sa, p.Env.ResolvConf, bin, "-conf", path)
	s.cmd.Dir = dir
	s.cmd.Env = append(os.Environ(),
		"KUBERNETES_SERVICE_HOST=127.0.0.1",
		"KUBERNETES_SERVICE_PORT="+strconv.Itoa(p.Env.APIServerPort))
	if _, err := s.run(ctx, p.Probe); err != nil {
		return nil, err
	}
	if p.Ready != "" {
		if err := s.waitReady(ctx, p.Ready); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// checkRunLayout fails unless client-go's /var/run paths land in /run, where the tmpfs goes.
func checkRunLayout() error {
	for _, t := range []string{"unshare", "mount", "cp"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not found: apt-get install util-linux mount coreutils", t)
		}
	}
	if dst, err := filepath.EvalSymlinks("/var/run"); err != nil || dst != "/run" {
		return fmt.Errorf("/var/run is not /run (%q, %v): the service account would not be where client-go reads it", dst, err)
	}
	return nil
}

// waitReady polls the ready plugin until every plugin that reports readiness (kubernetes
// synced, nsguard's cluster view synced) says so.
func (s *Server) waitReady(ctx context.Context, addr string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.done:
			return false, fmt.Errorf("coredns on %s exited before it was ready:\n%s", s.IP, s.Log())
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/ready", nil)
		res, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		res.Body.Close()
		last = res.Status
		return res.StatusCode == http.StatusOK, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("coredns on %s not ready within 30s (last: %s):\n%s", s.IP, last, s.Log())
	}
	return err
}
