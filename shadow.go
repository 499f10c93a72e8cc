package nsguard

import "github.com/nsguard/nsguard/clusterdns"

// shadowed reports whether the endpoint name n (<a>.<b>.<C>.svc.<zone>) hides a Service:
// b is a Service in C with an endpoint called a, and Service a exists in namespace b. A
// client in C that typed "a.b" meant Service a in namespace b, but its first search
// candidate is this name, and the endpoint answers. It does not allocate.
func (v *view) shadowed(n clusterdns.Name) bool {
	if !clusterdns.IsDNSLabel(n.Endpoint) {
		return false // SRV port names (_port._proto) are not Service names
	}
	var svc, ep, meant [128]byte
	if !v.hasEndpoint(lowerKey(svc[:0], n.Namespace, n.Service), lowerKey(ep[:0], "", n.Endpoint)) {
		return false
	}
	return v.hasService(lowerKey(meant[:0], n.Service, n.Endpoint))
}

// lowerKey appends "ns/name" (or just name) in lower case.
func lowerKey(buf []byte, ns, name string) []byte {
	buf = clusterdns.AppendLower(buf, ns)
	if ns != "" {
		buf = append(buf, '/')
	}
	return clusterdns.AppendLower(buf, name)
}
