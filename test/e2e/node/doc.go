// Package node runs a single-node Kubernetes cluster from real parts on this machine, for the
// end-to-end suite and the demo: the suite's control plane (etcd, kube-apiserver) with
// kube-controller-manager and kube-scheduler, and a node of kubelet, kube-proxy, Debian's
// containerd and runc, and the CNI bridge, host-local and loopback plugins. Every image is
// built here with buildah and imported into containerd; nothing is pulled.
//
// Nothing leaves the machine. Before anything starts, the Pod range gets an unreachable route
// and the Service range a route into a device that drops every packet (see hostnet.go);
// forwarded packets bound for the uplink are dropped before forwarding is switched on, and
// packets to either range on the uplink are counted (Node.UplinkPackets), so a test can
// require 0.
//
// Everything the node adds to the host has a fixed name (Names), so Stop removes it, and the
// next Start removes what a killed run left: processes in the node's cgroups and containerd's
// shims, mounts, network devices, routes, iptables chains, sysctls it changed, and its
// directories.
package node
