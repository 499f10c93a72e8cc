package nsguard

import (
	"net/netip"
	"sync"

	"github.com/nsguard/nsguard/clusterdns"
)

// clusterView is what nsguard reads of the cluster (clusterview.View): the handler does not
// care whether it comes from the kubernetes plugin's caches or informers of its own.
type clusterView interface {
	Synced() bool
	Stale() bool
	Pod(ip netip.Addr) string         // "namespace/name" of the only live Pod with ip, or ""
	PodUID(pod string) (string, bool) // when Events are on
	Shadowed(n clusterdns.Name) bool
	Homes(name string, inZone func(target string) bool) (services, aliases []string)
}

// viewGauges publishes one view's state under the servers of its block.
type viewGauges struct{ servers []string }

func (v *viewGauges) start() {
	for _, s := range v.servers {
		viewSynced.WithLabelValues(s).Set(0)
		viewStale.WithLabelValues(s).Set(0)
		viewStaleDecisions.WithLabelValues(s) // at 0 from the start, so that rates and alerts see it
	}
}

func (v *viewGauges) synced() {
	for _, s := range v.servers {
		viewSynced.WithLabelValues(s).Set(1)
	}
}

func (v *viewGauges) stale(stale bool) {
	x := 0.0
	if stale {
		x = 1
	}
	for _, s := range v.servers {
		viewStale.WithLabelValues(s).Set(x)
	}
}

// gaugeOwners says which view last set the view gauges of each server. A reload starts the
// new view before it stops the old one, so only the owner may remove a server's gauges.
var (
	gaugeMu     sync.Mutex
	gaugeOwners = map[string]*viewGauges{}
)

func claimGauges(v *viewGauges) {
	gaugeMu.Lock()
	defer gaugeMu.Unlock()
	for _, s := range v.servers {
		gaugeOwners[s] = v
	}
}

func releaseGauges(v *viewGauges) {
	gaugeMu.Lock()
	defer gaugeMu.Unlock()
	for _, s := range v.servers {
		if gaugeOwners[s] == v {
			delete(gaugeOwners, s)
			viewSynced.DeleteLabelValues(s)
			viewStale.DeleteLabelValues(s)
		}
	}
}
