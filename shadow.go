package nsguard

import (
	"strings"

	"github.com/nsguard/nsguard/clusterdns"
)

// shadowed reports whether the endpoint name n (<a>.<b>.<C>.svc.<zone>) hides a Service:
// b is a Service in C with an endpoint called a, and Service a exists in namespace b. A
// client in C that typed "a.b" meant Service a in namespace b, but its first search
// candidate is this name, and the endpoint answers. The labels are looked up as asked,
// without copying or allocating; only a name in mixed case is lowered first. SRV port
// names (_port._proto) are never an endpoint's name, so they are never found.
func (v *view) shadowed(n clusterdns.Name) bool {
	if hasUpper(n.Namespace) || hasUpper(n.Service) || hasUpper(n.Endpoint) {
		return v.shadowedLowered(n)
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.endpoints[objectKey{n.Namespace, n.Service}][n.Endpoint] == 0 {
		return false
	}
	_, ok := v.services[objectKey{n.Service, n.Endpoint}]
	return ok
}

// shadowedLowered is shadowed for a name in mixed case, as some forwarders send: Kubernetes
// names are lower case.
//
//go:noinline
func (v *view) shadowedLowered(n clusterdns.Name) bool {
	n.Namespace, n.Service, n.Endpoint = strings.ToLower(n.Namespace), strings.ToLower(n.Service), strings.ToLower(n.Endpoint)
	return v.shadowed(n)
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}
