package nsguard

import (
	"net/netip"

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
