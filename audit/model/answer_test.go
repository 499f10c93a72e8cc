package model

import (
	"reflect"
	"testing"
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
type stubUpstream map[string]Answer

func (u stubUpstream) Resolve(qname, qtype string) Answer {
	if a, ok := u[qname+" "+qtype]; ok {
		return a
	}
	return Answer{Rcode: NXDomain}
}

// TestKubeDNS holds the model to what the real kube-dns answered for the incident.
func TestKubeDNS(t *testing.T) {
	nodata := Answer{Rcode: NoError}
	external := func(up stubUpstream) *Cluster {
		c := NewCluster()
		for _, n := range []string{"other-app-1", "other-app-2"} {
			c.AddService(Service{Namespace: "my-app", Name: n, Type: "ExternalName", ExternalName: n + ".example.net"})
		}
		return c
	}
	resolving := stubUpstream{
		"other-app-1.example.net. A":    {Rcode: NoError, Records: []Record{{"other-app-1.example.net.", TypeA, "192.0.2.11"}}},
		"other-app-2.example.net. A":    {Rcode: NoError, Records: []Record{{"other-app-2.example.net.", TypeA, "192.0.2.12"}}},
		"other-app-1.example.net. AAAA": {Rcode: NoError},
		"other-app-2.example.net. AAAA": {Rcode: NoError},
	}
	tests := []struct {
		name    string
		cluster *Cluster
		up      UpstreamResolver
		qname   string
		qtype   string
		want    Answer
	}{
		{"apex: one CNAME, every target's address, shuffled", incident(), nil, "my-app.svc.cluster.local", TypeA, Answer{Rcode: NoError,
			CNAMEOneOf: []string{target1, target2},
			Records:    []Record{{target1, TypeA, "10.96.0.31"}, {target2, TypeA, "10.96.0.32"}}, Shuffled: true}},
		{"apex SRV", incident(), nil, "my-app.svc.cluster.local", TypeSRV, Answer{Rcode: NoError, Shuffled: true,
			Records: []Record{
				{"my-app.svc.cluster.local.", TypeSRV, "10 50 0 " + target1},
				{"my-app.svc.cluster.local.", TypeSRV, "10 50 0 " + target2},
			},
			Additional: []Record{{target1, TypeA, "10.96.0.31"}, {target2, TypeA, "10.96.0.32"}}}},
		{"apex AAAA", incident(), nil, "my-app.svc.cluster.local", TypeAAAA, nodata},
		{"apex TXT", incident(), nil, "my-app.svc.cluster.local", TypeTXT, nodata},
		{"apex CNAME", incident(), nil, "my-app.svc.cluster.local", TypeCNAME, nxdomain},
		{"an alias", incident(), nil, "other-app-1.my-app.svc.cluster.local", TypeA, Answer{Rcode: NoError, Records: []Record{
			{"other-app-1.my-app.svc.cluster.local.", TypeCNAME, target1}, {target1, TypeA, "10.96.0.31"}}}},
		{"the Service meant", incident(), nil, "my-app.new-namespace-2.svc.cluster.local", TypeA, Answer{Rcode: NoError,
			Records: []Record{{"my-app.new-namespace-2.svc.cluster.local.", TypeA, "10.96.0.20"}}}},
		{"first candidate", incident(), nil, "my-app.new-namespace-1.svc.cluster.local", TypeA, nxdomain},
		{"svc apex", incident(), nil, "svc.cluster.local", TypeA, nxdomain},
		{"zone apex", incident(), nil, "cluster.local", TypeA, nxdomain},
		{"namespace without Services", incident(), nil, "empty-ns.svc.cluster.local", TypeA, nxdomain},
		{"namespace of ClusterIP Services only", incident(), nil, "legacy-a.svc.cluster.local", TypeA, nxdomain},
		{"no namespace", incident(), nil, "nope.svc.cluster.local", TypeA, nxdomain},
		{"third candidate", incident(), nil, "my-app.cluster.local", TypeA, nxdomain},
		{"external targets that do not resolve", external(nil), stubUpstream{}, "my-app.svc.cluster.local", TypeA, nodata},
		{"external targets that resolve", external(nil), resolving, "my-app.svc.cluster.local", TypeA, Answer{Rcode: NoError,
			CNAMEOneOf: []string{"other-app-1.example.net.", "other-app-2.example.net."},
			Records:    []Record{{"other-app-1.example.net.", TypeA, "192.0.2.11"}, {"other-app-2.example.net.", TypeA, "192.0.2.12"}}, Shuffled: true}},
		{"external targets that resolve, AAAA: only the CNAME", external(nil), resolving, "my-app.svc.cluster.local", TypeAAAA, Answer{Rcode: NoError,
			CNAMEOneOf: []string{"other-app-1.example.net.", "other-app-2.example.net."}, Shuffled: true}},
		{"after the blog's fix, the first candidate", blogFix(incident()), nil, "my-app.new-namespace-1.svc.cluster.local", TypeA, Answer{Rcode: NoError, Records: []Record{
			{"my-app.new-namespace-1.svc.cluster.local.", TypeCNAME, "my-app.new-namespace-2.svc.cluster.local."},
			{"my-app.new-namespace-2.svc.cluster.local.", TypeA, "10.96.0.20"}}}},
		{"after the blog's fix, a new namespace apex answer", blogFix(incident()), nil, "new-namespace-1.svc.cluster.local", TypeA, Answer{Rcode: NoError, Records: []Record{
			{"new-namespace-1.svc.cluster.local.", TypeCNAME, "my-app.new-namespace-2.svc.cluster.local."},
			{"my-app.new-namespace-2.svc.cluster.local.", TypeA, "10.96.0.20"}}}},
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
	nodata := Answer{Rcode: NoError}
	tests := []struct {
		qname, qtype string
		want         Answer
	}{
		{"my-app.svc.cluster.local", TypeA, Answer{Rcode: NoError, Note: "namespace apex"}},
		{"my-app.svc.cluster.local", TypeAAAA, Answer{Rcode: NoError, Note: "namespace apex"}},
		{"nope.svc.cluster.local", TypeA, nxdomain},
		{"svc.cluster.local", TypeA, nodata},
		{"cluster.local", TypeA, nodata},
		{"other-app-1.my-app.svc.cluster.local", TypeA, Answer{Rcode: NoError, Records: []Record{
			{"other-app-1.my-app.svc.cluster.local.", TypeCNAME, target1}, {target1, TypeA, "10.96.0.31"}}}},
		{"other-app-1.my-app.svc.cluster.local", TypeCNAME, Answer{Rcode: NoError, Records: []Record{
			{"other-app-1.my-app.svc.cluster.local.", TypeCNAME, target1}}}},
		{"my-app.new-namespace-2.svc.cluster.local", TypeA, Answer{Rcode: NoError, Records: []Record{
			{"my-app.new-namespace-2.svc.cluster.local.", TypeA, "10.96.0.20"}}}},
		{"my-app.new-namespace-2.svc.cluster.local", TypeAAAA, nodata},
		{"10-244-1-5.new-namespace-1.pod.cluster.local", TypeA, Answer{Rcode: NoError, Note: "with pods insecure, as the Corefiles clusters run set",
			Records: []Record{{"10-244-1-5.new-namespace-1.pod.cluster.local.", TypeA, "10.244.1.5"}}}},
		{"my-app.corp.example", TypeA, Answer{Rcode: Upstream}},
	}
	for _, tc := range tests {
		if got := incident().CoreDNS(tc.qname, tc.qtype, "cluster.local", nil); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s:\ngot  %+v\nwant %+v", tc.qname, tc.qtype, got, tc.want)
		}
	}
}

func TestAnswerString(t *testing.T) {
	a := incident().KubeDNS("my-app.svc.cluster.local", TypeA, "cluster.local", nil)
	want := "one CNAME to " + target1 + " or " + target2 + ", A 10.96.0.31, A 10.96.0.32, in random order"
	if a.String() != want || !a.HasRecords() || a.NoData() {
		t.Errorf("%q, want %q", a.String(), want)
	}
}
