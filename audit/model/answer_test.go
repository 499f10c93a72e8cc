package model

import (
	"reflect"
	"testing"

	"github.com/nsguard/nsguard/clusterdns"
)

// incident is the cluster kube-dns was observed answering for: namespace my-app still
// holds two ExternalName Services whose targets are ClusterIP Services in legacy-a.
func incident() *Cluster {
	c := NewCluster()
	for _, ns := range []string{"my-app", "new-namespace-1", "new-namespace-2", "legacy-a", "empty-ns"} {
		c.AddNamespace(ns, "test")
	}
	https := []Port{{Name: "https", Protocol: "TCP", Port: 443}}
	c.AddService(Service{Namespace: "new-namespace-2", Name: "my-app", ClusterIPs: []string{"10.96.0.20"}, Ports: https})
	c.AddService(Service{Namespace: "legacy-a", Name: "other-app-1", ClusterIPs: []string{"10.96.0.31"}, Ports: https})
	c.AddService(Service{Namespace: "legacy-a", Name: "other-app-2", ClusterIPs: []string{"10.96.0.32"}, Ports: https})
	for _, n := range []string{"other-app-1", "other-app-2"} {
		c.AddService(Service{Namespace: "my-app", Name: n, Type: "ExternalName", ExternalName: n + ".legacy-a.svc.cluster.local."})
	}
	return c
}

// blogFix adds the blog's fix: an ExternalName my-app in the client's namespace.
func blogFix(c *Cluster) *Cluster {
	c.AddService(Service{Namespace: "new-namespace-1", Name: "my-app", Type: "ExternalName", ExternalName: "my-app.new-namespace-2.svc.cluster.local"})
	return c
}

const (
	target1 = "other-app-1.legacy-a.svc.cluster.local."
	target2 = "other-app-2.legacy-a.svc.cluster.local."
)

// stubUpstream answers names outside the zone from a table; the rest is NXDOMAIN.
type stubUpstream map[string]clusterdns.Answer

func (u stubUpstream) Resolve(qname, qtype string) clusterdns.Answer {
	if a, ok := u[qname+" "+qtype]; ok {
		return a
	}
	return clusterdns.Answer{Rcode: clusterdns.NXDomain}
}

// TestKubeDNS holds the model to what the real kube-dns answered for the incident.
func TestKubeDNS(t *testing.T) {
	nodata := clusterdns.Answer{Rcode: clusterdns.NoError}
	external := func(up stubUpstream) *Cluster {
		c := NewCluster()
		for _, n := range []string{"other-app-1", "other-app-2"} {
			c.AddService(Service{Namespace: "my-app", Name: n, Type: "ExternalName", ExternalName: n + ".example.net"})
		}
		return c
	}
	resolving := stubUpstream{
		"other-app-1.example.net. A":    {Rcode: clusterdns.NoError, Records: []clusterdns.Record{{Owner: "other-app-1.example.net.", Type: clusterdns.TypeA, Data: "192.0.2.11"}}},
		"other-app-2.example.net. A":    {Rcode: clusterdns.NoError, Records: []clusterdns.Record{{Owner: "other-app-2.example.net.", Type: clusterdns.TypeA, Data: "192.0.2.12"}}},
		"other-app-1.example.net. AAAA": {Rcode: clusterdns.NoError},
		"other-app-2.example.net. AAAA": {Rcode: clusterdns.NoError},
	}
	tests := []struct {
		name    string
		cluster *Cluster
		up      UpstreamResolver
		qname   string
		qtype   string
		want    clusterdns.Answer
	}{
		{"apex: one CNAME, every target's address, shuffled", incident(), nil, "my-app.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError,
			CNAMEOneOf: []string{target1, target2},
			Records:    []clusterdns.Record{{Owner: target1, Type: clusterdns.TypeA, Data: "10.96.0.31"}, {Owner: target2, Type: clusterdns.TypeA, Data: "10.96.0.32"}}, Shuffled: true}},
		{"apex SRV", incident(), nil, "my-app.svc.cluster.local", clusterdns.TypeSRV, clusterdns.Answer{Rcode: clusterdns.NoError, Shuffled: true,
			Records: []clusterdns.Record{
				{Owner: "my-app.svc.cluster.local.", Type: clusterdns.TypeSRV, Data: "10 50 0 " + target1},
				{Owner: "my-app.svc.cluster.local.", Type: clusterdns.TypeSRV, Data: "10 50 0 " + target2},
			},
			Additional: []clusterdns.Record{{Owner: target1, Type: clusterdns.TypeA, Data: "10.96.0.31"}, {Owner: target2, Type: clusterdns.TypeA, Data: "10.96.0.32"}}}},
		{"apex AAAA", incident(), nil, "my-app.svc.cluster.local", clusterdns.TypeAAAA, nodata},
		{"apex TXT", incident(), nil, "my-app.svc.cluster.local", clusterdns.TypeTXT, nodata},
		{"apex CNAME", incident(), nil, "my-app.svc.cluster.local", clusterdns.TypeCNAME, nxdomain},
		{"an alias", incident(), nil, "other-app-1.my-app.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{
			{Owner: "other-app-1.my-app.svc.cluster.local.", Type: clusterdns.TypeCNAME, Data: target1}, {Owner: target1, Type: clusterdns.TypeA, Data: "10.96.0.31"}}}},
		{"the Service meant", incident(), nil, "my-app.new-namespace-2.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError,
			Records: []clusterdns.Record{{Owner: "my-app.new-namespace-2.svc.cluster.local.", Type: clusterdns.TypeA, Data: "10.96.0.20"}}}},
		{"first candidate", incident(), nil, "my-app.new-namespace-1.svc.cluster.local", clusterdns.TypeA, nxdomain},
		{"svc apex", incident(), nil, "svc.cluster.local", clusterdns.TypeA, nxdomain},
		{"zone apex", incident(), nil, "cluster.local", clusterdns.TypeA, nxdomain},
		{"namespace without Services", incident(), nil, "empty-ns.svc.cluster.local", clusterdns.TypeA, nxdomain},
		{"namespace of ClusterIP Services only", incident(), nil, "legacy-a.svc.cluster.local", clusterdns.TypeA, nxdomain},
		{"no namespace", incident(), nil, "nope.svc.cluster.local", clusterdns.TypeA, nxdomain},
		{"third candidate", incident(), nil, "my-app.cluster.local", clusterdns.TypeA, nxdomain},
		{"external targets that do not resolve", external(nil), stubUpstream{}, "my-app.svc.cluster.local", clusterdns.TypeA, nodata},
		{"external targets that resolve", external(nil), resolving, "my-app.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError,
			CNAMEOneOf: []string{"other-app-1.example.net.", "other-app-2.example.net."},
			Records:    []clusterdns.Record{{Owner: "other-app-1.example.net.", Type: clusterdns.TypeA, Data: "192.0.2.11"}, {Owner: "other-app-2.example.net.", Type: clusterdns.TypeA, Data: "192.0.2.12"}}, Shuffled: true}},
		{"external targets that resolve, AAAA: only the CNAME", external(nil), resolving, "my-app.svc.cluster.local", clusterdns.TypeAAAA, clusterdns.Answer{Rcode: clusterdns.NoError,
			CNAMEOneOf: []string{"other-app-1.example.net.", "other-app-2.example.net."}, Shuffled: true}},
		{"after the blog's fix, the first candidate", blogFix(incident()), nil, "my-app.new-namespace-1.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{
			{Owner: "my-app.new-namespace-1.svc.cluster.local.", Type: clusterdns.TypeCNAME, Data: "my-app.new-namespace-2.svc.cluster.local."},
			{Owner: "my-app.new-namespace-2.svc.cluster.local.", Type: clusterdns.TypeA, Data: "10.96.0.20"}}}},
		{"after the blog's fix, a new namespace apex answer", blogFix(incident()), nil, "new-namespace-1.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{
			{Owner: "new-namespace-1.svc.cluster.local.", Type: clusterdns.TypeCNAME, Data: "my-app.new-namespace-2.svc.cluster.local."},
			{Owner: "my-app.new-namespace-2.svc.cluster.local.", Type: clusterdns.TypeA, Data: "10.96.0.20"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cluster.KubeDNS(tc.qname, tc.qtype, "cluster.local", tc.up); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestCoreDNS holds the model to what CoreDNS's kubernetes plugin answers for the incident.
func TestCoreDNS(t *testing.T) {
	nodata := clusterdns.Answer{Rcode: clusterdns.NoError}
	tests := []struct {
		qname, qtype string
		want         clusterdns.Answer
	}{
		{"my-app.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError, Note: "namespace apex"}},
		{"my-app.svc.cluster.local", clusterdns.TypeAAAA, clusterdns.Answer{Rcode: clusterdns.NoError, Note: "namespace apex"}},
		{"nope.svc.cluster.local", clusterdns.TypeA, nxdomain},
		{"svc.cluster.local", clusterdns.TypeA, nodata},
		{"cluster.local", clusterdns.TypeA, nodata},
		{"other-app-1.my-app.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{
			{Owner: "other-app-1.my-app.svc.cluster.local.", Type: clusterdns.TypeCNAME, Data: target1}, {Owner: target1, Type: clusterdns.TypeA, Data: "10.96.0.31"}}}},
		{"other-app-1.my-app.svc.cluster.local", clusterdns.TypeCNAME, clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{
			{Owner: "other-app-1.my-app.svc.cluster.local.", Type: clusterdns.TypeCNAME, Data: target1}}}},
		{"my-app.new-namespace-2.svc.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{
			{Owner: "my-app.new-namespace-2.svc.cluster.local.", Type: clusterdns.TypeA, Data: "10.96.0.20"}}}},
		{"my-app.new-namespace-2.svc.cluster.local", clusterdns.TypeAAAA, nodata},
		{"10-244-1-5.new-namespace-1.pod.cluster.local", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.NoError, Note: "with pods insecure, as the Corefiles clusters run set",
			Records: []clusterdns.Record{{Owner: "10-244-1-5.new-namespace-1.pod.cluster.local.", Type: clusterdns.TypeA, Data: "10.244.1.5"}}}},
		{"my-app.corp.example", clusterdns.TypeA, clusterdns.Answer{Rcode: clusterdns.Upstream}},
	}
	for _, tc := range tests {
		if got := incident().CoreDNS(tc.qname, tc.qtype, "cluster.local", nil); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s:\ngot  %+v\nwant %+v", tc.qname, tc.qtype, got, tc.want)
		}
	}
}

func TestAnswerString(t *testing.T) {
	a := incident().KubeDNS("my-app.svc.cluster.local", clusterdns.TypeA, "cluster.local", nil)
	want := "one CNAME to " + target1 + " or " + target2 + ", A 10.96.0.31, A 10.96.0.32, in random order"
	if a.String() != want || !a.HasRecords() || a.NoData() {
		t.Errorf("%q, want %q", a.String(), want)
	}
}
