//go:build e2e

package e2e

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// question is one name and type, and what kind of answer it draws.
type question struct {
	name  string
	qtype uint16
	kind  string // service, headless, endpoint, srv, pod, ptr, external, apex, nxdomain, zone
}

func (q question) String() string { return q.name + " " + dns.TypeToString[q.qtype] }

// stockQuestions are the distinct questions the transparency test asks: every kind of answer
// a cluster's DNS gives, over the tenants and the incident's objects. None is an endpoint name
// that shadows a Service, so in mode refuse only the namespace apexes may change.
func stockQuestions() []question {
	var qs []question
	add := func(kind, name string, qtypes ...uint16) {
		for _, t := range qtypes {
			qs = append(qs, question{name: dns.Fqdn(name), qtype: t, kind: kind})
		}
	}
	for i := range cluster.TenantCount {
		ns := cluster.TenantNamespace(i)
		svc := func(name string) string { return name + "." + ns + ".svc.cluster.local" }
		add("service", svc(cluster.TenantAPI), dns.TypeA, dns.TypeAAAA, dns.TypeSRV)
		add("srv", "_http._tcp."+svc(cluster.TenantAPI), dns.TypeSRV)
		add("srv", "_dns._udp."+svc(cluster.TenantAPI), dns.TypeSRV)
		add("headless", svc(cluster.TenantPool), dns.TypeA, dns.TypeSRV)
		add("endpoint", fmt.Sprintf("%s-%d.%s", cluster.TenantPool, i%cluster.TenantEndpoints, svc(cluster.TenantPool)), dns.TypeA)
		add("external", svc(cluster.TenantAlias), dns.TypeA)
		add("apex", ns+".svc.cluster.local", dns.TypeA, dns.TypeAAAA)
		add("nxdomain", svc("missing"), dns.TypeA)
		// What a pod in new-namespace-1 that typed api.<tenant> asks first, and last.
		add("nxdomain", cluster.TenantAPI+"."+ns+"."+cluster.ClientNamespace+".svc.cluster.local", dns.TypeA)
		add("external", cluster.TenantAPI+"."+ns+".corp.example", dns.TypeA)
		add("ptr", reverse(cluster.TenantAPIIP(i)), dns.TypePTR)
		add("ptr", reverse(cluster.TenantEndpointIP(i, (i+1)%cluster.TenantEndpoints)), dns.TypePTR)
		add("pod", strings.ReplaceAll(cluster.TenantEndpointIP(i, 0), ".", "-")+"."+ns+".pod.cluster.local", dns.TypeA)
	}
	add("apex", apex, dns.TypeA, dns.TypeAAAA, dns.TypeSRV)
	add("service", cluster.AppService+"."+cluster.AppNamespace+".svc.cluster.local", dns.TypeA)
	add("srv", "_https._tcp."+cluster.AppService+"."+cluster.AppNamespace+".svc.cluster.local", dns.TypeSRV)
	add("external", cluster.OtherApp1+"."+cluster.LegacyNamespace+".svc.cluster.local", dns.TypeA)
	add("external", cluster.OtherApp2+"."+cluster.LegacyNamespace+".svc.cluster.local", dns.TypeA)
	add("service", cluster.OtherApp1Target, dns.TypeA)
	add("nxdomain", "my-app."+cluster.ClientNamespace+".svc.cluster.local", dns.TypeA, dns.TypeAAAA)
	add("nxdomain", "my-app.cluster.local", dns.TypeA)
	add("external", "my-app.corp.example", dns.TypeA, dns.TypeAAAA)
	add("external", "other-app-2.example.net", dns.TypeA)
	add("nxdomain", "nothing.example.org", dns.TypeA)
	add("service", "kubernetes.default.svc.cluster.local", dns.TypeA)
	add("zone", "cluster.local", dns.TypeSOA)
	add("zone", "dns-version.cluster.local", dns.TypeTXT)
	add("ptr", reverse(cluster.AppClusterIP), dns.TypePTR)
	add("ptr", reverse(cluster.AppEndpointIP), dns.TypePTR)
	add("ptr", reverse("10.244.99.99"), dns.TypePTR) // no cluster address: on to the upstream
	add("pod", "1-2-3-4.default.pod.cluster.local", dns.TypeA)
	add("external", "node-1", dns.TypeA) // k3s's NodeHosts knows it
	return qs
}

// reverse is the in-addr.arpa name of an IPv4 address.
func reverse(ip string) string {
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		panic(err) // the addresses are the suite's own constants
	}
	return name
}
