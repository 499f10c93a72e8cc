package resolvers

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// PodResolvConf writes the resolv.conf kubelet gives a pod in namespace,
// plus one node domain (corp.example) as on real nodes. nameserver must be a
// bare IP: stub resolvers only talk to port 53, so point it at a 127.x.y.z.
func PodResolvConf(path, nameserver, namespace string) error {
	if _, err := netip.ParseAddr(nameserver); err != nil {
		return fmt.Errorf("nameserver %q must be a bare IP (port 53 is implied): %v", nameserver, err)
	}
	conf := fmt.Sprintf("search %s\nnameserver %s\noptions ndots:5\n", strings.Join(PodSearch(namespace), " "), nameserver)
	return os.WriteFile(path, []byte(conf), 0o644)
}

// PodSearch is the search list of PodResolvConf.
func PodSearch(namespace string) []string {
	return []string{namespace + ".svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}
}
