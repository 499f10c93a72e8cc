package nsguard

// shadowed reports whether the endpoint name n (<a>.<b>.<C>.svc.<zone>) hides a Service:
// b is a Service in C with an endpoint called a, and Service a exists in namespace b. A
// client in C that typed "a.b" meant Service a in namespace b, but its first search
// candidate is this name, and the endpoint answers. It does not allocate.
func (v *view) shadowed(n Name) bool {
	if !IsDNSLabel(n.Endpoint) {
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
	for i := 0; i < len(ns); i++ {
		buf = append(buf, lowerASCII(ns[i]))
	}
	if ns != "" {
		buf = append(buf, '/')
	}
	for i := 0; i < len(name); i++ {
		buf = append(buf, lowerASCII(name[i]))
	}
	return buf
}
