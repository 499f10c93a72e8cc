package nsguard

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubernetesClient builds the client of the cluster view, as the kubernetes plugin does:
// from kubeconfig and endpoint when given, else in-cluster. Outside a cluster with neither,
// it returns nil: nsguard then runs its core checks only.
func (cfg config) kubernetesClient(v *view) (kubernetes.Interface, error) {
	var rc *rest.Config
	var err error
	switch {
	case cfg.kubeconfig != "":
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.kubeconfig}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.kubeContext}
		overrides.ClusterInfo.Server = cfg.endpoint
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %q: %w", cfg.kubeconfig, err)
		}
	case cfg.endpoint != "":
		rc = &rest.Config{Host: cfg.endpoint}
	default:
		rc, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration: %w", err)
		}
	}
	rc.UserAgent = "coredns-nsguard"
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &contact{next: rt, view: v} })
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	return kubernetes.NewForConfig(rc)
}

// retryEvery and retryFor bound how the view waits for a lost API server. The reflectors back
// off exponentially on a refused watch, up to half a minute; waiting in the transport instead
// lets the view catch up within a second of the server's return.
const (
	retryEvery = 500 * time.Millisecond
	retryFor   = time.Minute
)

// contact watches every request the informers make. The reflectors retry a refused watch
// quietly, so the transport is where a lost API server shows: the view is marked stale on a
// failed request and fresh again on the next answer. Reads (GET: list and watch) that fail
// are retried here for a while, so the reflectors never grow their back-off.
type contact struct {
	next http.RoundTripper
	view *view
}

func (c *contact) RoundTrip(req *http.Request) (*http.Response, error) {
	give := time.Now().Add(retryFor)
	for {
		res, err := c.next.RoundTrip(req)
		if err == nil {
			if res.StatusCode < http.StatusInternalServerError && c.view.setStale(false) {
				log.Info("cluster view in touch with the API server again")
			}
			return res, nil
		}
		if req.Context().Err() != nil {
			return nil, err // stopping: not the API server's fault
		}
		if c.view.setStale(true) {
			log.Warningf("cluster view cut off from the API server; client names, advice and endpoint shadow checks use its last known state until it is back (check the API server and the network to it): %v", err)
		}
		if req.Method != http.MethodGet || req.Body != nil || time.Now().After(give) {
			return nil, err
		}
		select {
		case <-req.Context().Done():
			return nil, err
		case <-time.After(retryEvery):
		}
	}
}
