package scale

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The objects are shaped as a cluster's controllers leave them, so that they weigh what they
// weigh in a real cluster: a Pod as its ReplicaSet (or StatefulSet) writes it and kubelet
// reports it, about 9 KB in protobuf with the managedFields the API server adds; a Service as
// a Helm chart writes it; an EndpointSlice as the EndpointSlice controller writes it.

// Field managers, as in a cluster: the API server records one managedFields entry for each.
const (
	ControllerManager = "kube-controller-manager" // creates the Pods and EndpointSlices
	Kubelet           = "kubelet"                 // reports the Pods' status
	Helm              = "helm"                    // creates the Services
)

// epoch is when the cluster's objects were made, as far as their timestamps say.
var epoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func appLabels(k int) map[string]string {
	name := ServiceName(k)
	return map[string]string{
		"app":                          name,
		"app.kubernetes.io/name":       name,
		"app.kubernetes.io/instance":   name + "-prod",
		"app.kubernetes.io/component":  "backend",
		"app.kubernetes.io/part-of":    fmt.Sprintf("platform-%d", k%50),
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/version":    fmt.Sprintf("1.%d.%d", k%30, k%7),
		"helm.sh/chart":                fmt.Sprintf("%s-1.%d.%d", name, k%30, k%7),
		"team":                         fmt.Sprintf("team-%d", k%40),
	}
}

func selector(k int) map[string]string {
	return map[string]string{"app.kubernetes.io/name": ServiceName(k), "app.kubernetes.io/instance": ServiceName(k) + "-prod"}
}

// NamespaceObject is namespace j.
func NamespaceObject(j int) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace(j), Labels: map[string]string{
		"kubernetes.io/metadata.name":        Namespace(j),
		"team":                               fmt.Sprintf("team-%d", j%40),
		"pod-security.kubernetes.io/enforce": "baseline",
	}}}
}

// ServiceObject is Service k: ClusterIP (the API server picks the address), or headless.
func (s Size) ServiceObject(k int) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: ServiceName(k), Namespace: Namespace(k / s.ServicesPerNamespace), Labels: appLabels(k),
			Annotations: map[string]string{
				"meta.helm.sh/release-name":      ServiceName(k) + "-prod",
				"meta.helm.sh/release-namespace": Namespace(k / s.ServicesPerNamespace),
				"prometheus.io/scrape":           "true",
				"prometheus.io/port":             "9090",
			},
		},
		Spec: corev1.ServiceSpec{
			Selector: selector(k),
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: 9090, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP},
			},
			SessionAffinity: corev1.ServiceAffinityNone,
		},
	}
	if s.Headless(k) {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		svc.Spec.PublishNotReadyAddresses = true
	}
	return svc
}

// EndpointSliceObject is Service k's EndpointSlice, naming its Pods; svcUID is the Service's.
func (s Size) EndpointSliceObject(k int, svcUID string) *discoveryv1.EndpointSlice {
	name, ns := ServiceName(k), Namespace(k/s.ServicesPerNamespace)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-" + hash(k, 5), Namespace: ns,
			Labels: map[string]string{
				discoveryv1.LabelServiceName:   name,
				discoveryv1.LabelManagedBy:     "endpointslice-controller.k8s.io",
				"app.kubernetes.io/name":       name,
				"app.kubernetes.io/instance":   name + "-prod",
				"app.kubernetes.io/managed-by": "Helm",
			},
			Annotations: map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": epoch.Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: types.UID(svcUID),
				Controller: new(true), BlockOwnerDeletion: new(true)}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{
			{Name: new("http"), Port: new(int32(8080)), Protocol: new(corev1.ProtocolTCP)},
			{Name: new("metrics"), Port: new(int32(9090)), Protocol: new(corev1.ProtocolTCP)},
		},
	}
	for _, p := range s.PodsOf(k) {
		n := p % s.nodes()
		ep := discoveryv1.Endpoint{
			Addresses:  []string{PodIP(p)},
			Conditions: discoveryv1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)},
			NodeName:   new(nodeName(n)),
			Zone:       new(fmt.Sprintf("eu-west-1%c", 'a'+n%3)),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: s.PodName(p), UID: types.UID(uid(p, "pod"))},
		}
		if s.Headless(k) {
			ep.Hostname = new(s.PodName(p))
		}
		slice.Endpoints = append(slice.Endpoints, ep)
	}
	return slice
}

// PodObject is Pod p as its controller creates it, scheduled to its node.
func (s Size) PodObject(p int) *corev1.Pod {
	k := s.ServiceOf(p)
	name, svc, ns := s.PodName(p), ServiceName(k), Namespace(k/s.ServicesPerNamespace)
	labels := appLabels(k)
	for _, drop := range []string{"app.kubernetes.io/managed-by", "helm.sh/chart"} {
		delete(labels, drop)
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: svc + "-" + hash(k, 10),
		UID: types.UID(uid(k, "rs")), Controller: new(true), BlockOwnerDeletion: new(true)}
	if s.Headless(k) {
		owner.Kind, owner.Name, owner.UID = "StatefulSet", svc, types.UID(uid(k, "sts"))
		labels["apps.kubernetes.io/pod-index"] = fmt.Sprint(s.ordinal(p))
		labels["statefulset.kubernetes.io/pod-name"] = name
		labels["controller-revision-hash"] = svc + "-" + hash(k, 10)
	} else {
		labels["pod-template-hash"] = hash(k, 10)
	}
	n := p % s.nodes()
	token := "kube-api-access-" + hash(p, 5)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, Labels: labels,
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt":              epoch.Add(-72 * time.Hour).Format(time.RFC3339),
				"checksum/config":                                hex64(k, "config"),
				"prometheus.io/scrape":                           "true",
				"prometheus.io/port":                             "9090",
				"prometheus.io/path":                             "/metrics",
				"cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
			},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: svc + "-config"}, DefaultMode: new(int32(420))}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse("256Mi"))}}},
				{Name: token, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: new(int32(420)),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: new(int64(3607)), Path: "token"}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
							FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
					},
				}}},
			},
			Containers:                    []corev1.Container{appContainer(k, p, token), shipperContainer(k, token)},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: new(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            svc,
			NodeName:                      nodeName(n),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(10001)),
				RunAsGroup: new(int64(10001)), FSGroup: new(int64(10001)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			SchedulerName: corev1.DefaultSchedulerName,
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
			},
			PriorityClassName:  "",
			EnableServiceLinks: new(false),
		},
	}
	if s.Headless(k) {
		pod.Spec.Hostname, pod.Spec.Subdomain = name, svc
	}
	return pod
}

func mounts(token string, more ...corev1.VolumeMount) []corev1.VolumeMount {
	return append(more, corev1.VolumeMount{Name: token, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

func restrictedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: new(false), ReadOnlyRootFilesystem: new(true),
		RunAsNonRoot: new(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

func probe(path, port string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(port), Scheme: corev1.URISchemeHTTP}},
		PeriodSeconds: period, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: failures,
	}
}

func appImage(k int) string {
	return fmt.Sprintf("registry.example.com/team-%d/%s:1.%d.%d", k%40, ServiceName(k), k%30, k%7)
}

const shipperImage = "cr.fluentbit.io/fluent/fluent-bit:3.2.4"

func appContainer(k, p int, token string) corev1.Container {
	svc := ServiceName(k)
	return corev1.Container{
		Name:    "app",
		Image:   appImage(k) + "@sha256:" + hex64(k, "image"),
		Command: []string{"/app/server"},
		Args:    []string{"--config=/etc/app/config.yaml", "--http-addr=:8080", "--metrics-addr=:9090", "--log-format=json", "--shutdown-grace=25s"},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		},
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"),
			fieldEnv("POD_IP", "status.podIP"), fieldEnv("NODE_NAME", "spec.nodeName"),
			{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1")}}},
			{Name: "APP_ENV", Value: "production"},
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "OTEL_SERVICE_NAME", Value: svc},
			{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability.svc.cluster.local:4317"},
			{Name: "DATABASE_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: svc + "-db"}, Key: "url"}}},
			{Name: "FEATURE_FLAGS", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: svc + "-config"}, Key: "feature-flags"}}},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		VolumeMounts: mounts(token,
			corev1.VolumeMount{Name: "config", ReadOnly: true, MountPath: "/etc/app"},
			corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"}),
		LivenessProbe:            probe("/healthz", "http", 10, 3),
		ReadinessProbe:           probe("/readyz", "http", 5, 3),
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          restrictedContext(),
	}
}

func shipperContainer(k int, token string) corev1.Container {
	return corev1.Container{
		Name:  "log-shipper",
		Image: shipperImage,
		Ports: []corev1.ContainerPort{{Name: "flb-metrics", ContainerPort: 2020, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"), fieldEnv("NODE_NAME", "spec.nodeName"),
			{Name: "FLB_OUTPUT_HOST", Value: "logs.observability.svc.cluster.local"},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		VolumeMounts: mounts(token,
			corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"}),
		LivenessProbe:            probe("/api/v1/health", "flb-metrics", 20, 3),
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          restrictedContext(),
	}
}

// PodStatus is Pod p's status as kubelet reports a Pod that has run for a while: Running, at
// its unique address, with its conditions and both containers' statuses.
func (s Size) PodStatus(p int) corev1.PodStatus {
	k, n := s.ServiceOf(p), p%s.nodes()
	started := metav1.NewTime(epoch.Add(time.Duration(p%3600) * time.Second))
	ready := metav1.NewTime(started.Add(14 * time.Second))
	cond := func(t corev1.PodConditionType, at metav1.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at}
	}
	status := func(name, image, imageID string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: name, Ready: true, Started: new(true), RestartCount: int32(p % 3),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Image:       image,
			ImageID:     imageID,
			ContainerID: "containerd://" + hex64(p, name),
		}
	}
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers", started), cond(corev1.PodInitialized, started),
			cond(corev1.PodReady, ready), cond(corev1.ContainersReady, ready),
			cond(corev1.PodScheduled, metav1.NewTime(started.Add(-3*time.Second))),
		},
		HostIP:    nodeIP(n),
		HostIPs:   []corev1.HostIP{{IP: nodeIP(n)}},
		PodIP:     PodIP(p),
		PodIPs:    []corev1.PodIP{{IP: PodIP(p)}},
		StartTime: &started,
		QOSClass:  corev1.PodQOSBurstable,
		ContainerStatuses: []corev1.ContainerStatus{
			status("app", appImage(k), appImage(k)+"@sha256:"+hex64(k, "image")),
			status("log-shipper", shipperImage, "cr.fluentbit.io/fluent/fluent-bit@sha256:"+hex64(0, "shipper")),
		},
	}
}
