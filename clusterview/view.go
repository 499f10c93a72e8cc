// Package clusterview is nsguard's read-only picture of a cluster: which Services and
// Namespaces exist, which names the endpoints of each Service answer to, and which Pod owns
// an address. Services, endpoints and Namespaces come from the kubernetes plugin's own
// caches when it runs in the same server block, so that CoreDNS watches them once; from
// informers of its own otherwise (a node-local cache in front of cluster DNS). Pods come
// from a watch of its own that keeps only each Pod's addresses and name.
//
// Every read is safe for the query path: it takes at most a read lock and, on the paths
// that run for every query, does not allocate.
package clusterview

import (
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/kubernetes/object"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/internal/jsonlog"
)

var log = clog.NewWithPlugin("nsguard")

// View is the cluster as nsguard reads it.
type View struct {
	services services // nil until Start chose the source
	pods     *podStore

	synced      atomic.Bool // every source has synced
	stale       atomic.Bool // a read from the API server failed and none has succeeded since
	probeFailed atomic.Bool // the last probe failed: only a probe makes the view fresh
	unread      atomic.Bool // Pods came that could not be decoded: only Pods read make the view fresh

	streamRefused  atomic.Bool // the last streamed list of Pods was refused: the reflector lists at once
	noStreamedList sync.Once   // says so once

	cfg        Config
	probeEvery time.Duration
	relistHold time.Duration // how long the kubernetes plugin's relists are given; 0 without it
	gcCycles   func() uint64 // the runtime's completed collections, for holdRelist
	sweepWait  time.Duration // after that collection (SweepWait)
	run        *Run          // set by Start
}

// services is where Services, endpoints and Namespaces come from: the kubernetes plugin's
// caches (shared) or informers of the view's own (owned).
type services interface {
	hasSynced() bool
	// shadowed reports whether Service ns/svc has an endpoint called ep, and Service ep
	// exists in namespace svc. The names are lower case.
	shadowed(ns, svc, ep string) bool
	// each calls f with the namespace and ExternalName target of each Service called name.
	each(name string, f func(namespace, externalName string))
	hasNamespace(name string) bool
	// modified changes when a Service may have changed; it counts seconds.
	modified() int64
	// eachService calls f with every Service; alias is an ExternalName Service.
	eachService(f func(namespace, name, externalName string, alias bool))
}

// New returns a view that reads nothing until Start.
func New(cfg Config) *View {
	v := &View{cfg: cfg, probeEvery: ProbeEvery, relistHold: PodsRelistAfter, gcCycles: gcCycles, sweepWait: SweepWait}
	if cfg.Clients {
		v.pods = newPodStore(cfg.UIDs)
	}
	return v
}

// Synced reports whether every source has synced once.
func (v *View) Synced() bool { return v.synced.Load() }

// Stale reports whether the view is cut off from the API server: its last known state is
// all it has.
func (v *View) Stale() bool { return v.stale.Load() }

// Pod returns "namespace/name" of the only live Pod with address ip, or "". It does not
// allocate.
func (v *View) Pod(ip netip.Addr) string {
	if v.pods == nil || !ip.IsValid() {
		return ""
	}
	return v.pods.pod(ip)
}

// PodUID returns the UID of Pod "namespace/name", when the view keeps UIDs.
func (v *View) PodUID(pod string) (string, bool) {
	if v.pods == nil {
		return "", false
	}
	return v.pods.uid(pod)
}

// Shadowed reports whether the endpoint name n (<a>.<b>.<C>.svc.<zone>) hides a Service:
// b is a Service in C with an endpoint called a, and Service a exists in namespace b. A
// client in C that typed "a.b" meant Service a in namespace b, but its first search
// candidate is this name, and the endpoint answers. Only a name in mixed case, as some
// forwarders send, is lowered first: Kubernetes names are lower case.
func (v *View) Shadowed(n clusterdns.Name) bool {
	if v.services == nil {
		return false
	}
	if hasUpper(n.Namespace) || hasUpper(n.Service) || hasUpper(n.Endpoint) {
		return v.services.shadowed(strings.ToLower(n.Namespace), strings.ToLower(n.Service), strings.ToLower(n.Endpoint))
	}
	return v.services.shadowed(n.Namespace, n.Service, n.Endpoint)
}

// Homes returns the namespaces holding a Service called name: those that are not aliases
// into the cluster (inZone tells) first, then the aliases, each sorted. It allocates: it
// is for log lines only.
func (v *View) Homes(name string, inZone func(target string) bool) (services, aliases []string) {
	if v.services == nil {
		return nil, nil
	}
	v.services.each(strings.ToLower(name), func(ns, target string) {
		if target != "" && inZone(target) {
			aliases = append(aliases, ns)
		} else {
			services = append(services, ns)
		}
	})
	slices.Sort(services)
	slices.Sort(aliases)
	return services, aliases
}

// HasNamespace reports whether namespace name exists.
func (v *View) HasNamespace(name string) bool {
	return v.services != nil && v.services.hasNamespace(strings.ToLower(name))
}

// EachService calls f with every Service: its namespace, name and, for an ExternalName
// Service (alias), its target. It is for the live findings, beside the query path.
func (v *View) EachService(f func(namespace, name, externalName string, alias bool)) {
	if v.services != nil {
		v.services.eachService(f)
	}
}

// ServicesModified changes when a Service may have changed; it counts seconds.
func (v *View) ServicesModified() int64 {
	if v.services == nil {
		return 0
	}
	return v.services.modified()
}

// Controller is what the view reads of the kubernetes plugin's caches: the methods of its
// APIConn, which it indexes by "name.namespace".
type Controller interface {
	ServiceList() []*object.Service
	SvcIndex(string) []*object.Service
	EpIndex(string) []*object.Endpoints
	GetNamespaceByName(string) (*object.Namespace, error)
	HasSynced() bool
	Modified(kubernetes.ModifiedMode) int64
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// warnf logs a warning of the view: in text mode the line format makes of args, as ever;
// under -log-format json a record of msg with the value as the typed attribute a.
func warnf(a slog.Attr, msg, format string, args ...any) {
	if !jsonlog.On() {
		log.Warningf(format, args...)
		return
	}
	jsonlog.Warn(msg, a)
}

// warnErr logs msg and what failed, as warnf: err is the typed attribute error.
func warnErr(msg string, err error) {
	warnf(slog.String("error", err.Error()), msg, "%s: %v", msg, err)
}
