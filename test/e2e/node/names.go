package node

import "net/netip"

// The node's address ranges. They are apart from everything the stand-in suite routes or binds
// on this host while both run in one go test ./... (10.244.x.y/32 veths, 10.250.x and 10.53.x
// addresses on lo, its API servers' Service range 10.96.0.0/16 and the scale tests' Pod network
// 10.128.0.0/9, which only answers carry) and from the unit tests' 10.0.x and 10.1.x.
var (
	// PodCIDR is the cluster's Pod range: unreachable on the host but for the node's subnet.
	PodCIDR = netip.MustParsePrefix("10.72.0.0/16")
	// PodSubnet is this node's share, on the bridge. Small, so that host-local, which hands
	// out addresses round-robin, comes back to a freed one within a few dozen Pods.
	PodSubnet = netip.MustParsePrefix("10.72.0.0/27")
	// ServiceCIDR is the Service range, kube-apiserver's --service-cluster-ip-range.
	ServiceCIDR = netip.MustParsePrefix("10.73.0.0/16")
	// DNSServiceIP is kube-dns's ClusterIP, the 10th address of the range as kubeadm picks it.
	DNSServiceIP = netip.MustParseAddr("10.73.0.10")
	// NodeLocalIP is the node-local cache's link-local address (NodeLocal DNSCache's
	// __PILLAR__LOCAL__DNS__), on lo: this kernel has no dummy driver. Not 169.254.20.10,
	// which the stand-in suite binds on lo for its own node-local servers.
	NodeLocalIP = netip.MustParseAddr("169.254.25.10")
	// UpstreamIP is the node's own resolver (kubelet's resolvConf, CoreDNS's forward .): a
	// stand-in for the company's DNS, on lo too.
	UpstreamIP = netip.MustParseAddr("169.254.25.53")
)

// Names of what the node adds to the host, fixed so that a later run finds a killed run's.
const (
	NodeName   = "nsguard-node"
	bridge     = "nsg-br0"    // the CNI bridge
	loLabel    = "lo:nsgnode" // of NodeLocalIP and UpstreamIP on lo
	serviceDev = "nsg-svc"    // ifb: where the Service range is routed; it drops what it gets
	fwdChain   = "NSGUARD-NODE-FWD"
	countChain = "NSGUARD-NODE-OUT"
	rawChain   = "NSGUARD-NODE-RAW" // NOTRACK for the node-local cache, as node-cache adds
	cgroupRoot = "/nsguard-node"    // kubelet's cgroupRoot, in every hierarchy
	varDir     = "/var/lib/nsguard-node"
	runDir     = "/run/nsguard-node"
)
