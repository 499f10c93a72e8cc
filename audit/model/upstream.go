package model

import "github.com/nsguard/nsguard/clusterdns"

// UpstreamResolver answers names outside the cluster zone, as cluster DNS's upstream does.
type UpstreamResolver interface {
	Resolve(qname, qtype string) clusterdns.Answer
}

// upstream asks u, or says that the answer depends on the upstream when there is none.
func upstream(u UpstreamResolver, qname, qtype string) clusterdns.Answer {
	if u == nil {
		return clusterdns.Answer{Rcode: clusterdns.Upstream}
	}
	return u.Resolve(qname, qtype)
}

var nxdomain = clusterdns.Answer{Rcode: clusterdns.NXDomain}
