package nsguard

import (
	"errors"
	"fmt"
	"net/http"

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

// contact watches every request the informers make. The reflectors retry a refused watch
// quietly, so the transport is where a lost API server shows: the view is marked stale on
// a failed request and fresh again on the next answer.
type contact struct {
	next http.RoundTripper
	view *view
}

func (c *contact) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(req)
	switch {
	case err != nil && req.Context().Err() == nil:
		if !c.view.stale.Swap(true) {
			log.Warningf("cluster view cut off from the API server; client names, advice and endpoint shadow checks pause until it is back: %v", err)
		}
	case err == nil && res.StatusCode < http.StatusInternalServerError:
		if c.view.stale.Swap(false) {
			log.Info("cluster view in touch with the API server again")
		}
	}
	return res, err
}
