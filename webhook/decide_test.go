package webhook

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nsguard/nsguard/audit"
)

// cluster is an index holding namespaces ("name", or "name!" for one being deleted) and
// Services ("namespace/name"); a Service's namespace exists.
func cluster(objs ...string) *Index {
	x := NewIndex()
	for _, o := range objs {
		if ns, name, ok := strings.Cut(o, "/"); ok {
			if _, exists := x.Namespace(ns); !exists {
				x.AddNamespace(ns, false)
			}
			x.AddService(ns, name)
			continue
		}
		name, terminating := strings.CutSuffix(o, "!")
		x.AddNamespace(name, terminating)
	}
	return x
}

func createNamespace(name string) Change {
	return Change{Operation: Create, Kind: "Namespace", Name: name}
}
func createService(ns, name string) Change {
	return Change{Operation: Create, Kind: "Service", Namespace: ns, Name: name}
}
func deleteService(ns, name string) Change {
	return Change{Operation: Delete, Kind: "Service", Namespace: ns, Name: name}
}

// The incident's cluster: the legacy namespace my-app, the Service my-app its clients
// meant in new-namespace-2, and their namespace new-namespace-1.
var incident = []string{"my-app", "new-namespace-1", "new-namespace-2/my-app"}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		cluster []string
		change  Change
		allow   []string
		want    []string // each warning, whole, or its check for "check:..." rows
	}{
		// CREATE of a Namespace.
		{"namespace captures a Service elsewhere", []string{"new-namespace-1", "new-namespace-2/my-app"}, createNamespace("my-app"), nil, []string{
			`nsguard: namespace my-app captures the short name of Service my-app in new-namespace-2: clients elsewhere that type "my-app" get the namespace; fix: rename namespace my-app, or use my-app.new-namespace-2`,
		}},
		{"namespace captures Services in several namespaces", []string{"b/api", "a/api", "api-gw/x"}, createNamespace("api"), nil, []string{
			`nsguard: namespace api captures the short name of Service api in a, b: clients elsewhere that type "api" get the namespace; fix: rename namespace api, or use api.a`,
		}},
		{"clean namespace", incident, createNamespace("team-a"), nil, nil},
		{"namespace that exists already", incident, createNamespace("my-app"), nil, nil},
		{"namespace named like a schema label", incident, createNamespace("svc"), nil, []string{
			`nsguard: namespace svc is named like a label of the DNS schema: svc.svc.cluster.local reads both as namespace apex and as schema names below it; fix: rename namespace svc`,
		}},
		{"namespace named like a top-level domain", incident, createNamespace("com"), nil, []string{
			`nsguard: namespace com is named like a top-level domain: a client typing <x>.com gets Service x of namespace com first, and <y>.<x>.com one of its endpoints; fix: rename namespace com`,
		}},
		{"allowed namespace", []string{"new-namespace-2/my-app"}, createNamespace("my-app"), []string{"my-app"}, nil},
		{"allowed, yet reserved", []string{"tools/pod"}, createNamespace("pod"), []string{"pod"}, []string{"check:reserved-namespace"}},

		// CREATE of a Service.
		{"Service whose name a namespace captures", []string{"my-app", "new-namespace-1"}, createService("new-namespace-2", "my-app"), nil, []string{
			`nsguard: namespace my-app captures the short name of Service my-app in new-namespace-2: clients elsewhere that type "my-app" get the namespace; fix: use my-app.new-namespace-2, or rename or delete namespace my-app`,
		}},
		{"second Service of a captured name", incident, createService("new-namespace-3", "my-app"), nil, []string{
			`nsguard: namespace my-app captures the short name of Service my-app in new-namespace-2, new-namespace-3: clients elsewhere that type "my-app" get the namespace; fix: use my-app.new-namespace-3, or rename or delete namespace my-app`,
		}},
		{"Service named like its own namespace", []string{"my-app"}, createService("my-app", "my-app"), nil, nil},
		{"clean Service", incident, createService("new-namespace-1", "web"), nil, nil},
		{"Service that exists already", incident, createService("new-namespace-2", "my-app"), nil, nil},
		{"Service in a namespace named like a top-level domain", []string{"com"}, createService("com", "google"), nil, []string{
			`nsguard: namespace com is named like a top-level domain: a client typing <x>.com gets Service x of namespace com first, and <y>.<x>.com one of its endpoints; fix: rename namespace com`,
		}},
		{"Service of an allowed namespace's name", []string{"my-app"}, createService("new-namespace-2", "my-app"), []string{"my-app"}, nil},
		{"alias to a namespace apex", incident, Change{Operation: Create, Kind: "Service", Namespace: "new-namespace-1", Name: "app", ExternalName: "my-app.svc.cluster.local"}, nil, []string{
			`nsguard: alias new-namespace-1/app resolves through namespace apex my-app.svc.cluster.local. (new-namespace-1/app -> my-app.svc.cluster.local.); fix: point new-namespace-1/app at <service>.my-app.svc.cluster.local (a Service name, not a namespace)`,
		}},
		{"alias to a Service", incident, Change{Operation: Create, Kind: "Service", Namespace: "new-namespace-1", Name: "my-app", ExternalName: "my-app.new-namespace-2.svc.cluster.local"}, nil, []string{
			// the blog's fix is itself captured for clients outside new-namespace-1
			"check:namespace-captures-service",
		}},
		{"alias that dangles: not this webhook's", incident, Change{Operation: Create, Kind: "Service", Namespace: "new-namespace-1", Name: "web", ExternalName: "nothing.new-namespace-2.svc.cluster.local"}, nil, nil},
		{"alias out of the cluster", incident, Change{Operation: Create, Kind: "Service", Namespace: "new-namespace-1", Name: "web", ExternalName: "example.com"}, nil, nil},

		// DELETE of a Service.
		{"delete: clients fall through to the namespace", []string{"my-app", "new-namespace-1/my-app"}, deleteService("new-namespace-1", "my-app"), nil, []string{
			`nsguard: once Service new-namespace-1/my-app is deleted, clients in new-namespace-1 that type "my-app" get namespace my-app; fix: rename or delete namespace my-app, or keep this Service while clients type my-app`,
		}},
		{"delete: another home", []string{"my-app", "new-namespace-1/my-app", "new-namespace-2/my-app"}, deleteService("new-namespace-1", "my-app"), nil, []string{
			`nsguard: once Service new-namespace-1/my-app is deleted, clients in new-namespace-1 that type "my-app" get namespace my-app; fix: clients in new-namespace-1 use my-app.new-namespace-2, or rename or delete namespace my-app`,
		}},
		{"delete: no such namespace", []string{"new-namespace-1/my-app"}, deleteService("new-namespace-1", "my-app"), nil, nil},
		{"delete: the namespace's own Service", []string{"my-app/my-app"}, deleteService("my-app", "my-app"), nil, nil},
		{"delete: its namespace is going", []string{"my-app", "new-namespace-1!", "new-namespace-1/my-app"}, deleteService("new-namespace-1", "my-app"), nil, nil},
		{"delete: a Service that is not there", []string{"my-app"}, deleteService("new-namespace-1", "my-app"), nil, nil},
		{"delete: allowed namespace", []string{"my-app", "new-namespace-1/my-app"}, deleteService("new-namespace-1", "my-app"), []string{"my-app"}, nil},

		// What the webhook is not registered for tells nothing.
		{"delete of a namespace", incident, Change{Operation: Delete, Kind: "Namespace", Name: "my-app"}, nil, nil},
		{"update of a Service", incident, Change{Operation: "UPDATE", Kind: "Service", Namespace: "new-namespace-2", Name: "my-app"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Zone: "cluster.local", Allow: map[string]bool{}}
			for _, a := range tt.allow {
				p.Allow[a] = true
			}
			v := p.Decide(cluster(tt.cluster...), tt.change)
			if len(v.Warnings) != len(tt.want) || len(v.Findings) != len(tt.want) {
				t.Fatalf("got %d warnings %q, want %d:\n%s", len(v.Warnings), v.Warnings, len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i, w := range tt.want {
				if check, ok := strings.CutPrefix(w, "check:"); ok {
					if v.Findings[i].Check != check {
						t.Errorf("finding %d is %s, want %s", i, v.Findings[i].Check, check)
					}
					continue
				}
				if v.Warnings[i] != w {
					t.Errorf("warning %d:\n got %s\nwant %s", i, v.Warnings[i], w)
				}
			}
			if v.Deny {
				t.Errorf("denied without --deny")
			}
		})
	}
}

// The warnings use audit's words: the message of the finding audit reports for the
// cluster after the change, whole.
func TestWarningIsAuditsMessage(t *testing.T) {
	p := Policy{Zone: "cluster.local"}
	x := cluster("new-namespace-1", "new-namespace-2/my-app")
	v := p.Decide(x, createNamespace("my-app"))
	x.AddNamespace("my-app", false)
	fs := audit.NamespaceFindings(x, "my-app", "cluster.local")
	if len(fs) != 1 || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], ": "+fs[0].Message+"; fix: ") {
		t.Fatalf("warning %q does not hold audit's message %+v", v.Warnings, fs)
	}
}

// --deny refuses what a CREATE warns of, and nothing else: not a clean change, not a DELETE.
func TestDecideDeny(t *testing.T) {
	p := Policy{Zone: "cluster.local", Deny: true}
	tests := []struct {
		name    string
		cluster []string
		change  Change
		deny    bool
	}{
		{"namespace capture", []string{"new-namespace-2/my-app"}, createNamespace("my-app"), true},
		{"Service capture", []string{"my-app"}, createService("new-namespace-2", "my-app"), true},
		{"reserved", nil, createNamespace("svc"), true},
		{"clean namespace", incident, createNamespace("team-a"), false},
		{"clean Service", incident, createService("new-namespace-1", "web"), false},
		{"delete that warns", []string{"my-app", "new-namespace-1/my-app"}, deleteService("new-namespace-1", "my-app"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := p.Decide(cluster(tt.cluster...), tt.change)
			if v.Deny != tt.deny {
				t.Fatalf("deny %v, want %v (%q)", v.Deny, tt.deny, v.Warnings)
			}
			if tt.deny && v.Message != strings.Join(v.Warnings, "\nand ") {
				t.Errorf("message %q, want the warnings", v.Message)
			}
			if tt.change.Operation == Delete && len(v.Warnings) == 0 {
				t.Errorf("the DELETE did not warn")
			}
		})
	}
}

// Names at their 63-character limit still make warnings kubectl prints whole.
func TestWarningLength(t *testing.T) {
	long := func(c byte) string { return strings.Repeat(string(c), 63) }
	a, b, c := long('a'), long('b'), long('c')
	p := Policy{Zone: "cluster.local"}
	for _, tc := range []struct {
		cluster []string
		change  Change
	}{
		{[]string{b + "/" + a, c + "/" + a}, createNamespace(a)},
		{[]string{a, c + "/" + a}, createService(b, a)},
		{[]string{a, b + "/" + a}, deleteService(b, a)},
		{nil, Change{Operation: Create, Kind: "Service", Namespace: b, Name: c, ExternalName: a + ".svc.cluster.local"}},
	} {
		v := p.Decide(cluster(tc.cluster...), tc.change)
		if len(v.Warnings) == 0 {
			t.Fatalf("%+v: no warning", tc.change)
		}
		for _, w := range v.Warnings {
			if n := utf8.RuneCountInString(w); n > maxWarningRunes || !strings.HasPrefix(w, "nsguard: ") || !strings.Contains(w, b) {
				t.Errorf("%d runes: %s", n, w)
			}
		}
	}
}
