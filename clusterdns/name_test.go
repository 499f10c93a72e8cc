package clusterdns

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	zones := []string{"cluster.local.", "example.org."}
	tests := []struct {
		qname string
		zones []string
		want  Name
	}{
		{"my-app.svc.cluster.local.", nil, Name{Shape: NamespaceApex, Zone: "cluster.local.", Namespace: "my-app"}},
		{"My-App.SVC.Cluster.LOCAL.", nil, Name{Shape: NamespaceApex, Zone: "cluster.local.", Namespace: "My-App"}},
		{"my-app.svc.example.org.", nil, Name{Shape: NamespaceApex, Zone: "example.org.", Namespace: "my-app"}},
		{"my-app.new-namespace-2.svc.cluster.local.", nil, Name{Shape: ServiceName, Zone: "cluster.local.", Namespace: "new-namespace-2", Service: "my-app"}},
		{"web-0.nginx.default.svc.cluster.local.", nil, Name{Shape: EndpointName, Zone: "cluster.local.", Namespace: "default", Service: "nginx", Endpoint: "web-0"}},
		{"10-244-1-5.nginx.default.svc.cluster.local.", nil, Name{Shape: EndpointName, Zone: "cluster.local.", Namespace: "default", Service: "nginx", Endpoint: "10-244-1-5"}},
		{"_https._tcp.my-app.ns.svc.cluster.local.", nil, Name{Shape: EndpointName, Zone: "cluster.local.", Namespace: "ns", Service: "my-app", Endpoint: "_https._tcp"}},
		{"_tcp.my-app.ns.svc.cluster.local.", nil, Name{Shape: EndpointName, Zone: "cluster.local.", Namespace: "ns", Service: "my-app", Endpoint: "_tcp"}},
		{"a.b.my-app.ns.svc.cluster.local.", nil, Name{Shape: Other, Zone: "cluster.local."}},
		{"x.y.z.my-app.ns.svc.cluster.local.", nil, Name{Shape: Other, Zone: "cluster.local."}},
		{"svc.cluster.local.", nil, Name{Shape: SvcApex, Zone: "cluster.local."}},
		{"cluster.local.", nil, Name{Shape: ZoneApex, Zone: "cluster.local."}},
		{"CLUSTER.local.", nil, Name{Shape: ZoneApex, Zone: "cluster.local."}},
		{"pod.cluster.local.", nil, Name{Shape: PodName, Zone: "cluster.local."}},
		{"10-244-1-5.default.pod.cluster.local.", nil, Name{Shape: PodName, Zone: "cluster.local."}},
		{"my-app.cluster.local.", nil, Name{Shape: Other, Zone: "cluster.local."}},
		{"my-app.corp.example.", nil, Name{Shape: OutOfZone}},
		{"notcluster.local.", nil, Name{Shape: OutOfZone}},
		{"my-app.svc.cluster.local", nil, Name{Shape: OutOfZone}}, // not fully qualified
		{"", nil, Name{Shape: OutOfZone}},
		{".", nil, Name{Shape: OutOfZone}},
		{`my\.app.svc.cluster.local.`, nil, Name{Shape: Other, Zone: "cluster.local."}},
		{`my-app\.svc.cluster.local.`, nil, Name{Shape: Other, Zone: "cluster.local."}},
		{`my-app.svc\.cluster.local.`, nil, Name{Shape: OutOfZone}},
		{`my\000app.svc.cluster.local.`, nil, Name{Shape: Other, Zone: "cluster.local."}},
		{"mý-app.svc.cluster.local.", nil, Name{Shape: Other, Zone: "cluster.local."}},
		{"*.svc.cluster.local.", nil, Name{Shape: Other, Zone: "cluster.local."}},
		{"-app.svc.cluster.local.", nil, Name{Shape: Other, Zone: "cluster.local."}},
		{"my-app..svc.cluster.local.", nil, Name{Shape: Other, Zone: "cluster.local."}},
		{strings.Repeat("a", 64) + ".svc.cluster.local.", nil, Name{Shape: Other, Zone: "cluster.local."}},
		{strings.Repeat("a", 63) + ".svc.cluster.local.", nil, Name{Shape: NamespaceApex, Zone: "cluster.local.", Namespace: strings.Repeat("a", 63)}},
		// The root zone, and the longest of nested zones.
		{"my-app.svc.", []string{"."}, Name{Shape: NamespaceApex, Zone: ".", Namespace: "my-app"}},
		{"my-app.svc.cluster.local.", []string{"."}, Name{Shape: Other, Zone: "."}},
		{"my-app.svc.cluster.local.", []string{"local.", "cluster.local."}, Name{Shape: NamespaceApex, Zone: "cluster.local.", Namespace: "my-app"}},
		{"my-app.svc.cluster.local.", []string{"cluster.local.", "local."}, Name{Shape: NamespaceApex, Zone: "cluster.local.", Namespace: "my-app"}},
	}
	for _, tc := range tests {
		t.Run(tc.qname, func(t *testing.T) {
			z := tc.zones
			if z == nil {
				z = zones
			}
			if got := Classify(tc.qname, z); got != tc.want {
				t.Errorf("Classify(%q) = %+v, want %+v", tc.qname, got, tc.want)
			}
		})
	}
}

func TestClassifyDoesNotAllocate(t *testing.T) {
	zones := []string{"cluster.local."}
	for _, qname := range []string{"my-app.svc.cluster.local.", "_https._tcp.my-app.ns.svc.cluster.local.", "My-App.corp.example."} {
		if n := testing.AllocsPerRun(100, func() { Classify(qname, zones) }); n != 0 {
			t.Errorf("Classify(%q) allocates %v times, want 0", qname, n)
		}
	}
}

func TestShapeString(t *testing.T) {
	for s := OutOfZone; s <= Other; s++ {
		if s.String() == "unknown" || s.String() == "" {
			t.Errorf("shape %d has no name", s)
		}
	}
	if Shape(200).String() != "unknown" {
		t.Error("an unknown shape must say so")
	}
}

// EndpointIn cuts every one-label endpoint name Classify reads, the same way, and no name
// of another depth or kind.
func TestEndpointIn(t *testing.T) {
	zones := []string{"cluster.local.", "."}
	tests := []struct {
		qname string
		ok    bool
	}{
		{"web-0.nginx.shop.svc.cluster.local.", true},
		{"Web-0.NGINX.shop.SVC.cluster.local.", true},
		{"web-0.nginx.shop.svc.", true},
		{"api.github.com.svc.cluster.local.", true},
		{"a_b.c.d.svc.cluster.local.", true}, // cut; its labels are no Kubernetes names, so never found
		{"my-app.svc.cluster.local.", false},
		{"my-app.ns.svc.cluster.local.", false},
		{"_https._tcp.my-app.ns.svc.cluster.local.", false},
		{"a.b.c.pod.cluster.local.", false},
		{"a..c.svc.cluster.local.", false},
		{`a\.b.c.svc.cluster.local.`, false},
		{`a\.b.c.d.svc.cluster.local.`, false},
		{"a.b.c.d.svc.cluster.local.", false},
		{"web-0.nginx.shop.svc.example.org.", false},
	}
	for _, tc := range tests {
		zone := MatchZone(tc.qname, zones)
		got, ok := EndpointIn(tc.qname, zone)
		if ok != tc.ok {
			t.Errorf("EndpointIn(%q) ok = %v, want %v", tc.qname, ok, tc.ok)
		}
		if n := ClassifyIn(tc.qname, zone); n.Shape == EndpointName && IsDNSLabel(n.Endpoint) && (!ok || got != n) {
			t.Errorf("EndpointIn(%q) = %+v, %v, but Classify reads %+v", tc.qname, got, ok, n)
		}
	}
}

func TestClassifyRootZone(t *testing.T) {
	got := Classify("web-0.nginx.default.svc.", []string{"."})
	want := Name{Shape: EndpointName, Zone: ".", Namespace: "default", Service: "nginx", Endpoint: "web-0"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func BenchmarkClassify(b *testing.B) {
	zones := []string{"cluster.local."}
	for _, qname := range []string{"my-app.corp.example.", "My-App.svc.cluster.local.", "_https._tcp.my-app.ns.svc.cluster.local."} {
		b.Run(qname, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Classify(qname, zones)
			}
		})
	}
}
