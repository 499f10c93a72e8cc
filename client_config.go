package nsguard

import (
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubernetesClient builds the client of the cluster view and Events, as the kubernetes
// plugin does: from kubeconfig and endpoint when given, else in-cluster. Outside a cluster
// with neither, it returns nil: nsguard then runs its core checks only. It keeps client-go's
// rate limits and back-off: the view never retries faster than the reflectors do.
func (cfg config) kubernetesClient() (*kubeClient, error) {
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
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &kubeClient{cs, rc}, nil
}

// kubeClient is a clientset and the configuration it was built from: the view's Pod watch
// builds a client of its own from it, which decodes only what the view keeps.
type kubeClient struct {
	kubernetes.Interface
	rest *rest.Config
}
