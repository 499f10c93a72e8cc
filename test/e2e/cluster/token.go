package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceAccountToken creates the ServiceAccounts, ClusterRoles and ClusterRoleBindings of
// manifests (files under root, read now, so that a test runs with what is shipped), and
// returns a token for ServiceAccount namespace/name minted with the TokenRequest API, as
// kubelet mints a Pod's. Objects that exist are kept; their namespace is made if missing.
func ServiceAccountToken(ctx context.Context, cs kubernetes.Interface, root string, manifests []string, namespace, name string) ([]byte, error) {
	if err := ensureNamespace(ctx, cs, namespace); err != nil {
		return nil, err
	}
	found := false
	for _, rel := range manifests {
		objs, err := decodeManifestFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			made, err := createRBAC(ctx, cs, o)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			found = found || made == "ServiceAccount "+namespace+"/"+name
		}
	}
	if !found {
		return nil, fmt.Errorf("no ServiceAccount %s/%s in %s", namespace, name, strings.Join(manifests, ", "))
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}},
		metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	return []byte(tr.Status.Token), nil
}

// WriteKubeconfigFor writes a kubeconfig at path for this control plane with token, trusting
// the API server's serving certificate as a Pod trusts its ca.crt.
func (cp *ControlPlane) WriteKubeconfigFor(path string, token []byte) error {
	ca, err := cp.ServingCA()
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["nsguard-e2e"] = &clientcmdapi.Cluster{Server: cp.Server, CertificateAuthorityData: ca}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: string(token)}
	cfg.Contexts["nsguard-e2e"] = &clientcmdapi.Context{Cluster: "nsguard-e2e", AuthInfo: "sa"}
	cfg.CurrentContext = "nsguard-e2e"
	return clientcmd.WriteToFile(*cfg, path)
}
