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
// JSON is streamed: only one object, or one item of a List, is held at a time. A YAML
// document, JSON object or List item larger than 32 MiB fails the load.
func LoadFiles(paths []string, stdin io.Reader) (*Cluster, error) {
	c := loader{NewCluster()}
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
type loader struct{ *Cluster }

func (c loader) loadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return c.loadStream(f, path)
}

// maxDocument bounds what is held whole: one YAML document, or one JSON object or item of a
// JSON List, which is read an item at a time. Decoding takes several times its size.
const maxDocument = 32 << 20

func (c loader) loadStream(r io.Reader, name string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if isJSON(br) {
		return c.loadJSON(br, name)
	}
	return c.loadYAML(br, name)
}

// isJSON says whether the stream starts with a JSON object, as the API's decoders sniff it.
func isJSON(br *bufio.Reader) bool {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if err != nil || n > br.Size() {
			return false
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
}

// tooLarge is the error for a document past maxDocument.
func tooLarge(where string) error {
	return fmt.Errorf("%s: larger than %d MiB, which nsguard does not read whole; "+
		"split the file, or for a List use kubectl get -o json, which nsguard reads an item at a time", where, maxDocument>>20)
}

// loadYAML reads YAML documents one at a time.
func (c loader) loadYAML(br *bufio.Reader, name string) error {
	var doc bytes.Buffer
	n := 1
	flush := func() error {
		where := fmt.Sprintf("%s: document %d", name, n)
		n++
		raw, err := utilyaml.ToJSON(doc.Bytes())
		doc.Reset()
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			return nil // an empty document, e.g. only comments
		}
		if err := c.addRaw(raw, where, "", ""); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", name, err)
		}
		if isSeparator(line) && doc.Len() > 0 {
			if err := flush(); err != nil {
				return err
			}
		} else if !isSeparator(line) {
			if doc.Len()+len(line) > maxDocument {
				return tooLarge(fmt.Sprintf("%s: document %d", name, n))
			}
			doc.Write(line)
		}
		if errors.Is(err, io.EOF) {
			if doc.Len() == 0 {
				return nil
			}
			return flush()
		}
	}
}

// isSeparator is the YAML document separator as package yaml reads it: "---" and blanks.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	return ok && len(bytes.TrimSpace(rest)) == 0
}

// boundedReader fails once more than limit bytes were read since mark: a JSON value held
// whole is bounded without knowing its size first.
type boundedReader struct {
	r          io.Reader
	read, mark int64
	limit      int64
	where      string
}

var errTooLarge = errors.New("too large")

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.read-b.mark > b.limit {
		return 0, errTooLarge
	}
	// Small reads keep what the decoder holds ahead of mark small.
	n, err := b.r.Read(p[:min(len(p), 64<<10)])
	b.read += int64(n)
	if b.read-b.mark > b.limit {
		return n, errTooLarge
	}
	return n, err
}

// loadJSON reads JSON objects, the items of a List one at a time: of a kubectl get -o json
// only one item is held at once.
func (c loader) loadJSON(br *bufio.Reader, name string) error {
	in := &boundedReader{r: br, limit: maxDocument}
	d := json.NewDecoder(in)
	for n := 1; ; n++ {
		where := fmt.Sprintf("%s: document %d", name, n)
		in.mark = d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil && tok != json.Delim('{') {
			err = errors.New("not a Kubernetes object: not a JSON object")
		}
		if err == nil {
			err = c.streamObject(d, in, where)
		}
		switch {
		case errors.Is(err, errTooLarge):
			return tooLarge(where)
		case err != nil:
			return fmt.Errorf("%s: %w", where, err)
		}
	}
}

// streamObject reads the rest of an object whose '{' was read. Its fields are held, but for
// items, which are added one by one as they come: a List's items may come before its kind
// (kubectl writes apiVersion, items, kind).
func (c loader) streamObject(d *json.Decoder, in *boundedReader, where string) error {
	fields := map[string]json.RawMessage{}
	var h header
	items, held := 0, 0
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if key != "items" {
			in.mark = d.InputOffset()
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				return err
			}
			if held += len(v); held > maxDocument {
				return errTooLarge
			}
			fields[key] = v
			switch key {
			case "kind":
				json.Unmarshal(v, &h.Kind)
			case "apiVersion":
				json.Unmarshal(v, &h.APIVersion)
			}
			continue
		}
		if tok, err := d.Token(); err != nil {
			return err
		} else if tok != json.Delim('[') {
			if tok == nil { // "items": null
				continue
			}
			return errors.New("not a Kubernetes object: items is not a list")
		}
		for d.More() {
			items++
			in.mark = d.InputOffset()
			var item json.RawMessage
			if err := d.Decode(&item); err != nil {
				return fmt.Errorf("item %d: %w", items, err)
			}
			if len(item) > maxDocument { // the reader stops what is past it, this what ends at it
				return errTooLarge
			}
			if err := c.addItem(item, where, h); err != nil {
				return fmt.Errorf("item %d: %w", items, err)
			}
		}
		if _, err := d.Token(); err != nil { // ']'
			return err
		}
	}
	if _, err := d.Token(); err != nil { // '}'
		return err
	}
	if items > 0 || fields["items"] == nil && strings.HasSuffix(h.Kind, "List") {
		if !strings.HasSuffix(h.Kind, "List") {
			return fmt.Errorf("items in a %q, which is not a List", h.Kind)
		}
		if h.APIVersion == "" {
			return fmt.Errorf("%s without apiVersion", h.Kind)
		}
		return nil
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	return c.addRaw(raw, where, "", "")
}

// addItem adds an item of a List streamed: with its own kind, or the kind of a typed list
// read before its items.
func (c loader) addItem(item json.RawMessage, where string, list header) error {
	var h header
	if err := json.Unmarshal(item, &h); err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if h.Kind != "" {
		return c.addRaw(item, where, "", "")
	}
	if !strings.HasSuffix(list.Kind, "List") || list.Kind == "List" {
		return errors.New("no kind, and no typed List kind before the items to take it from")
	}
	return c.addRaw(item, where, list.APIVersion, strings.TrimSuffix(list.Kind, "List"))
}

type header struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

var decoder = scheme.Codecs.UniversalDeserializer()

// addRaw adds one JSON object. Items of a typed list (ServiceList) may lack apiVersion
// and kind, as the API returns them; they inherit them from the list.
func (c loader) addRaw(raw []byte, where, apiVersion, kind string) error {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if h.Kind == "" && kind != "" {
		h.Kind, h.APIVersion = kind, apiVersion
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		m["kind"], m["apiVersion"] = kind, apiVersion
		raw, _ = json.Marshal(m)
	}
	switch {
	case h.Kind == "":
		return errors.New("no kind")
	case h.APIVersion == "":
		return fmt.Errorf("%s without apiVersion", h.Kind)
	case strings.HasSuffix(h.Kind, "List"):
		itemKind := ""
		if h.Kind != "List" {
			itemKind = strings.TrimSuffix(h.Kind, "List")
		}
		for i, item := range h.Items {
			if err := c.addRaw(item, where, h.APIVersion, itemKind); err != nil {
				return fmt.Errorf("item %d: %w", i+1, err)
			}
		}
		return nil
	}
	switch h.Kind {
	case "Namespace", "Service", "EndpointSlice", "Endpoints", "StatefulSet", "Pod":
	default:
		return nil // not a kind cluster DNS answers from
	}
	obj, _, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", h.Kind, err)
	}
	return c.add(obj, where)
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
	c := loader{NewCluster()}
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
