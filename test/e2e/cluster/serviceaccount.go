package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// CoreDNS's service account, as the deploy manifests name it.
const (
	CoreDNSNamespace      = "kube-system"
	CoreDNSServiceAccount = "coredns"
)

// rbacManifests are the files (under the repository root) whose ServiceAccount, ClusterRoles
// and ClusterRoleBindings CoreDNS runs with: kubeadm's CoreDNS, and nsguard's own role.
var rbacManifests = []string{
	"deploy/kubernetes/base/coredns.yaml",
	"deploy/kubernetes/rbac-nsguard.yaml",
}

// wantRBAC is what rbacManifests must hold; a manifest that lost one fails loudly.
var wantRBAC = []string{
	"ServiceAccount kube-system/coredns",
	"ClusterRole system:coredns", "ClusterRoleBinding system:coredns",
	"ClusterRole system:coredns-nsguard", "ClusterRoleBinding system:coredns-nsguard",
}

// CoreDNSToken creates CoreDNS's ServiceAccount and RBAC from the repository's deploy
// manifests (read and decoded now, so the test runs with what is shipped), and returns a token
// for it minted with the TokenRequest API, as kubelet mints a pod's: CoreDNS then runs with
// the real RBAC, not as the admin. Objects that already exist are kept.
func CoreDNSToken(ctx context.Context, cs kubernetes.Interface, root string) ([]byte, error) {
	if err := ensureNamespace(ctx, cs, CoreDNSNamespace); err != nil {
		return nil, err
	}
	made := map[string]bool{}
	for _, rel := range rbacManifests {
		objs, err := decodeManifestFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			name, err := createRBAC(ctx, cs, o)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			if name != "" {
				made[name] = true
			}
		}
	}
	for _, w := range wantRBAC {
		if !made[w] {
			return nil, fmt.Errorf("%s missing from %v", w, rbacManifests)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(CoreDNSNamespace).CreateToken(ctx, CoreDNSServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}},
		metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", CoreDNSNamespace, CoreDNSServiceAccount, err)
	}
	return []byte(tr.Status.Token), nil
}

// createRBAC creates o if it is a ServiceAccount, ClusterRole or ClusterRoleBinding and
// returns its kind and name; other kinds (the ConfigMap, Deployment, Service) are skipped.
func createRBAC(ctx context.Context, cs kubernetes.Interface, o runtime.Object) (string, error) {
	var err error
	var name string
	switch o := o.(type) {
	case *corev1.ServiceAccount:
		name = "ServiceAccount " + o.Namespace + "/" + o.Name
		_, err = cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRole:
		name = "ClusterRole " + o.Name
		_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRoleBinding:
		name = "ClusterRoleBinding " + o.Name
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
	default:
		return "", nil
	}
	if ignoreExists(err) != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return name, nil
}

// DecodeManifests decodes every YAML document of b (a manifest file, kustomize's output)
// into a typed object.
func DecodeManifests(b []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		o, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
}

// decodeManifestFile is DecodeManifests of a file, its errors named by the file.
func decodeManifestFile(path string) ([]runtime.Object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := DecodeManifests(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if ignoreExists(err) != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}
