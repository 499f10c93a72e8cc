// Package podnet gives the end-to-end suite's client pods their own network: one network
// namespace per pod, joined to the host by a veth pair and holding the pod's address as a /32,
// so that a DNS server on the host sees which pod asked. Server addresses (cluster DNS, node-local
// DNS, the upstream stand-in) are /32s on the host's lo, where a server binds them.
//
// Every name a Network makes starts with its prefix and the process ID, so that a later run can
// tell its own from a dead run's and remove those first. Close removes everything; CloseAll, for
// TestMain, closes every Network still open.
//
//	net, err := podnet.New("nsg")
//	defer net.Close()
//	net.AddServiceAddr("10.53.0.10")
//	web, err := net.AddPod("web", "10.244.1.5")
//	conn, err := web.Dial(ctx, "udp", "10.53.0.10:53") // leaves from 10.244.1.5
package podnet
