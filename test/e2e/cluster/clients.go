package cluster

import (
	"context"

	"k8s.io/client-go/kubernetes"
)

// Client pods with addresses of their own (each in its own network namespace, see package
// podnet), so that CoreDNS sees which pod asked. Web asks through the trap; probe sits in the
// namespace that "allow client kube-system" exempts.
const (
	WebPod   = "web" // in ClientNamespace
	WebPodIP = "10.244.1.5"

	ProbeNamespace = "kube-system"
	ProbePod       = "probe"
	ProbePodIP     = "10.244.0.5"
)

// ApplyClientPods creates the Pods web (in ClientNamespace) and kube-system/probe, Running at
// their addresses. ApplyIncident's namespaces must exist or are created.
func ApplyClientPods(ctx context.Context, cs kubernetes.Interface) error {
	if err := CreateRunningPod(ctx, cs, ClientNamespace, WebPod, WebPodIP); err != nil {
		return err
	}
	return CreateRunningPod(ctx, cs, ProbeNamespace, ProbePod, ProbePodIP)
}
