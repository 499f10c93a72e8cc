package webhook

import (
	"slices"
	"strings"

	"github.com/nsguard/nsguard/audit"
)

// overlay is the cluster as it will be once a change is admitted: the index with one
// namespace or Service added, or one Service removed. The checks run on it as they run on
// the cluster, so the webhook tells what audit would find after the change.
type overlay struct {
	audit.Names
	namespace string     // a namespace added
	add       *audit.Ref // a Service added
	drop      *audit.Ref // a Service removed
}

// admissionSource is where an object under admission was read.
const admissionSource = "admission request"

func (o overlay) Namespace(name string) (string, bool) {
	if name == o.namespace {
		return admissionSource, true
	}
	return o.Names.Namespace(name)
}

func (o overlay) Service(ns, name string) (audit.Ref, bool) {
	switch {
	case o.add != nil && o.add.Namespace == ns && o.add.Name == name:
		return *o.add, true
	case o.drop != nil && o.drop.Namespace == ns && o.drop.Name == name:
		return audit.Ref{}, false
	}
	return o.Names.Service(ns, name)
}

func (o overlay) ServicesNamed(name string) []audit.Ref {
	return o.edit(o.Names.ServicesNamed(name), func(r audit.Ref) bool { return r.Name == name },
		func(a, b audit.Ref) int { return strings.Compare(a.Namespace, b.Namespace) })
}

func (o overlay) ServicesIn(ns string) []audit.Ref {
	return o.edit(o.Names.ServicesIn(ns), func(r audit.Ref) bool { return r.Namespace == ns },
		func(a, b audit.Ref) int { return strings.Compare(a.Name, b.Name) })
}

// edit applies the change to a list of the index's Services that in selects, kept in order.
func (o overlay) edit(refs []audit.Ref, in func(audit.Ref) bool, cmp func(a, b audit.Ref) int) []audit.Ref {
	same := func(a, b audit.Ref) bool { return a.Namespace == b.Namespace && a.Name == b.Name }
	if o.drop != nil && in(*o.drop) {
		refs = slices.DeleteFunc(slices.Clone(refs), func(r audit.Ref) bool { return same(r, *o.drop) })
	}
	if o.add != nil && in(*o.add) {
		refs = slices.DeleteFunc(slices.Clone(refs), func(r audit.Ref) bool { return same(r, *o.add) })
		i, _ := slices.BinarySearchFunc(refs, *o.add, cmp)
		refs = slices.Insert(refs, i, *o.add)
	}
	return refs
}
