package webhook

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/nsguard/nsguard/audit"
)

// source is where the index's objects were read, as the checks name it.
const source = "live"

// byName indexes Services by name, for audit.Names.ServicesNamed.
const byName = "name"

var (
	namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	servicesResource   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// Index is what the webhook knows of the cluster: the names of every Namespace and Service,
// and which namespaces are being deleted, from metadata-only informers. It implements
// audit.Names, so the webhook runs nsguard audit's own checks on it. It knows no Service's
// type or target: those would need the Services' specs, which it does not watch.
type Index struct {
	namespaces, services cache.Indexer
	synced               func() bool
}

// NewIndex returns an empty index, synced: for tests, which fill it with Add.
func NewIndex() *Index {
	return &Index{
		namespaces: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		services:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers),
		synced:     func() bool { return true },
	}
}

var indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, byName: func(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	return []string{m.GetName()}, nil
}}

func metaOf(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	return meta.Accessor(obj)
}

// StartIndex starts metadata-only informers of Namespaces and Services with client and
// returns their index, which syncs in the background; they stop with ctx.
func StartIndex(ctx context.Context, client metadata.Interface) (*Index, error) {
	f := metadatainformer.NewSharedInformerFactoryWithOptions(client, 0, metadatainformer.WithTransform(strip))
	ns := f.ForResource(namespacesResource).Informer()
	svc := f.ForResource(servicesResource).Informer()
	if err := svc.AddIndexers(cache.Indexers{byName: indexers[byName]}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		f.Shutdown()
	}()
	return &Index{
		namespaces: ns.GetIndexer(),
		services:   svc.GetIndexer(),
		synced:     func() bool { return ns.HasSynced() && svc.HasSynced() },
	}, nil
}

// strip keeps of each object what the index reads: its name and namespace, whether it is
// being deleted, and its resource version. Labels, annotations and managedFields, most of
// what a Service's metadata weighs, are dropped as each object arrives.
func strip(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil // a DeletedFinalStateUnknown: its object was stripped when stored
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
			DeletionTimestamp: m.DeletionTimestamp,
		},
	}, nil
}

// Synced reports whether both informers have listed once.
func (x *Index) Synced() bool { return x.synced() }

// AddNamespace and AddService put an object in the index, as its informer would: for tests.
func (x *Index) AddNamespace(name string, terminating bool) {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if terminating {
		now := metav1.Now()
		m.DeletionTimestamp = &now
	}
	_ = x.namespaces.Add(m)
}

func (x *Index) AddService(namespace, name string) {
	_ = x.services.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
}

// Len returns how many namespaces and Services the index holds.
func (x *Index) Len() (namespaces, services int) {
	return len(x.namespaces.ListKeys()), len(x.services.ListKeys())
}

// Terminating reports whether namespace name is being deleted: its Services go with it.
func (x *Index) Terminating(name string) bool {
	obj, ok, _ := x.namespaces.GetByKey(name)
	if !ok {
		return false
	}
	m, err := metaOf(obj)
	return err == nil && m.GetDeletionTimestamp() != nil
}

// The reads of audit.Names.

func (x *Index) Namespace(name string) (string, bool) {
	if _, ok, _ := x.namespaces.GetByKey(name); ok {
		return source, true
	}
	return "", false
}

func (x *Index) Service(ns, name string) (audit.Ref, bool) {
	if _, ok, _ := x.services.GetByKey(ns + "/" + name); ok {
		return audit.Ref{Namespace: ns, Name: name, Source: source}, true
	}
	return audit.Ref{}, false
}

func (x *Index) ServicesNamed(name string) []audit.Ref {
	out := x.refs(byName, name)
	slices.SortFunc(out, func(a, b audit.Ref) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out
}

func (x *Index) ServicesIn(ns string) []audit.Ref {
	out := x.refs(cache.NamespaceIndex, ns)
	slices.SortFunc(out, func(a, b audit.Ref) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (x *Index) refs(index, value string) []audit.Ref {
	objs, err := x.services.ByIndex(index, value)
	if err != nil || len(objs) == 0 {
		return nil
	}
	out := make([]audit.Ref, 0, len(objs))
	for _, o := range objs {
		if m, err := metaOf(o); err == nil {
			out = append(out, audit.Ref{Namespace: m.GetNamespace(), Name: m.GetName(), Source: source})
		}
	}
	return out
}
