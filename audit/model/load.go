package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/pager"

	"github.com/nsguard/nsguard/clusterdns"
)

// LoadFiles reads manifests from paths: files, directories (recursively, *.yaml, *.yml and
// *.json) or "-" for stdin. Each file may hold several YAML documents or JSON objects,
// List kinds and the output of kubectl get -o yaml|json. Kinds nsguard does not need are
// skipped; a document that cannot be decoded fails the load, naming file and document.
//
// Memory is bounded by the input (see Limits). Documents are read whole, one at a time: a
// JSON one takes 3 to 5 times its size (as read, and a List's items once more, and again at
// each step into a List in a List); a YAML one up to about 50 times, in the YAML library,
// so one larger than Limits.YAMLDocument fails.
func LoadFiles(paths []string, stdin io.Reader) (*Cluster, error) {
	return DefaultLimits.LoadFiles(paths, stdin)
}

// Limits bound what LoadFiles holds at once. Past one, the load fails with an error that
// names it, the file and the document.
type Limits struct {
	YAMLDocument int64 // bytes of one YAML document
	JSONDocument int64 // bytes of one JSON document, a List with its items
	ListDepth    int   // Lists in Lists: each level's items are read again
}

// DefaultLimits are LoadFiles's: a YAML document then takes up to about 200 MiB to read,
// and Lists nest 4 deep (kubectl writes them one deep).
var DefaultLimits = Limits{YAMLDocument: 4 << 20, JSONDocument: 512 << 20, ListDepth: 4}

// LoadFiles is LoadFiles within l.
func (l Limits) LoadFiles(paths []string, stdin io.Reader) (*Cluster, error) {
	c := loader{Cluster: NewCluster(), limits: l}
	for _, p := range paths {
		if p == "-" {
			if err := c.loadStream(stdin, "<stdin>"); err != nil {
				return nil, err
			}
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			if err := c.loadFile(p); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					return c.loadFile(path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return c.Cluster, nil
}

// loader adds what manifests and the API hold to a Cluster.
type loader struct {
	*Cluster
	limits Limits
}

func (c loader) loadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return c.loadStream(f, path)
}

// decoder reads one document at a time; both kinds below do.
type decoder interface{ Decode(any) error }

// loadStream reads a stream of YAML documents or JSON objects with the two halves of
// apimachinery's YAMLOrJSONDecoder, sniffed as it sniffs them. Not with the whole: for its
// fallback from JSON to YAML it keeps a second copy of every JSON document, and that
// fallback would read as YAML, at 50 times its size, a stream bounded as JSON.
func (c loader) loadStream(r io.Reader, name string) error {
	in := &boundedReader{r: r, limit: max(c.limits.YAMLDocument, c.limits.JSONDocument)}
	var src io.Reader = bufio.NewReaderSize(in, 4096)
	head, _ := src.(*bufio.Reader).Peek(4096)
	var d decoder
	kind := "YAML"
	if utilyaml.IsJSONBuffer(head) {
		d, kind, in.limit = json.NewDecoder(src), "JSON", c.limits.JSONDocument
	} else {
		d, in.limit = utilyaml.NewYAMLToJSONDecoder(src), c.limits.YAMLDocument
	}
	for n := 1; ; n++ {
		where := fmt.Sprintf("%s: document %d", name, n)
		in.mark = in.read
		var raw json.RawMessage
		err := d.Decode(&raw)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, errTooLarge):
			return fmt.Errorf("%s: a %s document over %s: %s", where, kind, size(in.limit), tooLargeHint[kind])
		case err != nil:
			return fmt.Errorf("%s: %w", where, err)
		}
		if jd, ok := d.(*json.Decoder); ok && len(raw) > 1<<20 {
			// Its buffer grew to the document's size and would stay with it: a new
			// decoder goes on from what this one read ahead.
			ahead, _ := io.ReadAll(jd.Buffered())
			src = io.MultiReader(bytes.NewReader(ahead), src)
			d = json.NewDecoder(src)
		}
		if string(raw) == "null" || len(raw) == 0 {
			continue // an empty document, e.g. only comments
		}
		if err := c.addRaw(raw, where, nil, 1); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
}

// size says n bytes in MiB or KiB.
func size(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

var tooLargeHint = map[string]string{
	"YAML": "nsguard does not read one whole, as reading YAML takes up to 50 times its size; " +
		"use kubectl get -o json, which nsguard reads within about 3 times its size, or split the file",
	"JSON": "split the file",
}

// boundedReader fails once more than limit bytes were read since mark: a document is
// bounded without knowing its size first, to within what the decoders read ahead (64 KiB).
type boundedReader struct {
	r                 io.Reader
	read, mark, limit int64
}

var errTooLarge = errors.New("too large")

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.read-b.mark > b.limit {
		return 0, errTooLarge
	}
	// Small reads keep what the decoder reads ahead of a document small.
	n, err := b.r.Read(p[:min(len(p), 64<<10)])
	b.read += int64(n)
	if b.read-b.mark > b.limit {
		return n, errTooLarge
	}
	return n, err
}

// errTooDeep is a List past Limits.ListDepth; the Lists around it do not wrap it.
type errTooDeep int

func (e errTooDeep) Error() string {
	return fmt.Sprintf("a List nested in Lists more than %d deep", int(e))
}

var objectDecoder = scheme.Codecs.UniversalDeserializer()

// addRaw adds one JSON object at depth (1 for a document). An item of a typed List
// (ServiceList) may lack apiVersion and kind, as the API returns them: list names them.
func (c loader) addRaw(raw []byte, where string, list *schema.GroupVersionKind, depth int) error {
	var h metav1.TypeMeta
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	gvk := h.GroupVersionKind()
	if list != nil && h.Kind == "" {
		gvk.Kind = list.Kind
	}
	if list != nil && h.APIVersion == "" {
		gvk.Group, gvk.Version = list.Group, list.Version
	}
	switch {
	case gvk.Kind == "":
		return errors.New("no kind")
	case h.APIVersion == "" && list == nil:
		return fmt.Errorf("%s without apiVersion", gvk.Kind)
	case strings.HasSuffix(gvk.Kind, "List"):
		return c.addList(raw, where, gvk, depth)
	}
	switch gvk.Kind {
	case "Namespace", "Service", "EndpointSlice", "Endpoints", "StatefulSet", "Pod":
	default:
		return nil // not a kind cluster DNS answers from
	}
	obj, _, err := objectDecoder.Decode(raw, &gvk, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", gvk.Kind, err)
	}
	return c.add(obj, where)
}

// addList adds the items of a List, each dropped once added: a List's items are held once.
func (c loader) addList(raw []byte, where string, gvk schema.GroupVersionKind, depth int) error {
	if depth > c.limits.ListDepth {
		return errTooDeep(c.limits.ListDepth)
	}
	var list metav1.List
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	var items *schema.GroupVersionKind
	if gvk.Kind != "List" {
		items = &schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: strings.TrimSuffix(gvk.Kind, "List")}
	}
	for i := range list.Items {
		item := list.Items[i].Raw
		list.Items[i].Raw = nil
		err := c.addRaw(item, where, items, depth+1)
		var deep errTooDeep
		switch {
		case errors.As(err, &deep):
			return err
		case err != nil:
			return fmt.Errorf("item %d: %w", i+1, err)
		}
	}
	return nil
}

// add records one typed object. Offline, a namespaced object without a namespace is in "default".
func (c loader) add(obj runtime.Object, src string) error {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	if m.GetName() == "" {
		return fmt.Errorf("%T without metadata.name", obj)
	}
	ns := m.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	switch o := obj.(type) {
	case *corev1.Namespace:
		c.AddNamespace(o.Name, src)
	case *corev1.Service:
		c.AddService(Service{
			Namespace: ns, Name: o.Name, Type: string(o.Spec.Type), ExternalName: o.Spec.ExternalName,
			Headless: o.Spec.ClusterIP == corev1.ClusterIPNone, ClusterIPs: clusterIPs(o), Source: src,
		})
	case *discoveryv1.EndpointSlice:
		svc := o.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			return nil // not owned by a Service: DNS does not use it
		}
		for _, ep := range o.Endpoints {
			c.AddSliceEndpoint(ns, svc, clusterdns.SliceEndpoint{
				Hostname: ptrString(ep.Hostname), PodName: podName(ep.TargetRef), Addresses: ep.Addresses, Ready: ep.Conditions.Ready,
			}, src)
		}
	case *corev1.Endpoints:
		for _, ss := range o.Subsets {
			for _, a := range ss.Addresses { // NotReadyAddresses are not answered
				c.AddSliceEndpoint(ns, o.Name, clusterdns.SliceEndpoint{
					Hostname: a.Hostname, PodName: podName(a.TargetRef), Addresses: []string{a.IP},
				}, src)
			}
		}
	case *appsv1.StatefulSet:
		// Offline dumps often hold the StatefulSet but not its slices: its pods will be
		// the hostnames <name>-<i> of the governing Service.
		if o.Spec.ServiceName == "" {
			return nil
		}
		replicas := int32(1)
		if o.Spec.Replicas != nil {
			replicas = min(*o.Spec.Replicas, 10000)
		}
		for i := range replicas {
			c.AddEndpoint(ns, o.Spec.ServiceName, clusterdns.Endpoint{Name: fmt.Sprintf("%s-%d", o.Name, i), Kind: clusterdns.EndpointHostname, Source: src})
		}
	case *corev1.Pod:
		if o.Spec.Hostname != "" && o.Spec.Subdomain != "" {
			var addrs []string
			for _, ip := range o.Status.PodIPs {
				addrs = append(addrs, ip.IP)
			}
			c.AddEndpoint(ns, o.Spec.Subdomain, clusterdns.Endpoint{Name: o.Spec.Hostname, Kind: clusterdns.EndpointHostname, Addrs: addrs, Source: src})
		}
	}
	return nil
}

// podName is the name of the Pod ref points at, or "".
func podName(ref *corev1.ObjectReference) string {
	if ref == nil || ref.Kind != "Pod" {
		return ""
	}
	return ref.Name
}

func clusterIPs(s *corev1.Service) []string {
	if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil
	}
	if len(s.Spec.ClusterIPs) > 0 {
		return s.Spec.ClusterIPs
	}
	return []string{s.Spec.ClusterIP}
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// LoadLive reads namespaces, Services and EndpointSlices from the API. It only lists.
func LoadLive(ctx context.Context, cs kubernetes.Interface) (*Cluster, error) {
	c := loader{Cluster: NewCluster()}
	lists := []struct {
		kind string
		list func(metav1.ListOptions) (runtime.Object, error)
	}{
		{"namespaces", func(o metav1.ListOptions) (runtime.Object, error) { return cs.CoreV1().Namespaces().List(ctx, o) }},
		{"services", func(o metav1.ListOptions) (runtime.Object, error) { return cs.CoreV1().Services("").List(ctx, o) }},
		{"endpointslices", func(o metav1.ListOptions) (runtime.Object, error) {
			return cs.DiscoveryV1().EndpointSlices("").List(ctx, o)
		}},
	}
	for _, l := range lists {
		p := pager.New(pager.SimplePageFunc(l.list))
		p.PageSize = 500
		err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error { return c.add(obj, "live") })
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.kind, err)
		}
	}
	return c.Cluster, nil
}
