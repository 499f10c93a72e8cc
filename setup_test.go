package nsguard

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"

	"github.com/miekg/dns"
)

func TestSetup(t *testing.T) {
	defaults := func(change func(*config)) config {
		cfg := config{mode: ModeLog, shadows: ModeLog, rcode: dns.RcodeNameError,
			allowNamespaces: map[string]struct{}{}, allowClients: map[string]struct{}{}, logInterval: time.Minute, logLimit: 10, clients: true, findings: true}
		if change != nil {
			change(&cfg)
		}
		return cfg
	}
	tests := []struct {
		name     string
		corefile string
		want     config
		wantErr  string // every error names the plugin and the offending token
	}{
		{"bare", `nsguard`, defaults(nil), ""},
		{"empty block", "nsguard {\n}", defaults(nil), ""},
		{"zone", `nsguard cluster.local`, defaults(func(c *config) { c.zones = []string{"cluster.local."} }), ""},
		{"subzone", `nsguard svc.cluster.local`, defaults(func(c *config) { c.zones = []string{"svc.cluster.local."} }), ""},
		{"zone case", `nsguard Cluster.Local.`, defaults(func(c *config) { c.zones = []string{"cluster.local."} }), ""},
		{"refuse", "nsguard {\n mode refuse\n}", defaults(func(c *config) { c.mode = ModeRefuse }), ""},
		{"refuse REFUSED", "nsguard {\n mode refuse\n rcode REFUSED\n}", defaults(func(c *config) { c.mode = ModeRefuse; c.rcode = dns.RcodeRefused }), ""},
		{"refuse nxdomain lower case", "nsguard {\n mode REFUSE\n rcode nxdomain\n}", defaults(func(c *config) { c.mode = ModeRefuse }), ""},
		{"log", "nsguard {\n mode log\n}", defaults(nil), ""},
		{"allow", "nsguard {\n allow namespace my-app Legacy\n allow namespace kube-system\n}", defaults(func(c *config) {
			c.allowNamespaces = map[string]struct{}{"my-app": {}, "legacy": {}, "kube-system": {}}
		}), ""},
		{"allow client", "nsguard {\n allow client kube-system Monitoring\n endpoint http://127.0.0.1:1\n}", defaults(func(c *config) {
			c.allowClients = map[string]struct{}{"kube-system": {}, "monitoring": {}}
			c.endpoint = "http://127.0.0.1:1"
		}), ""},
		{"endpoint shadows refused", "nsguard {\n mode refuse\n endpoint_shadows refuse\n endpoint http://127.0.0.1:1\n}", defaults(func(c *config) {
			c.mode, c.shadows, c.endpoint = ModeRefuse, ModeRefuse, "http://127.0.0.1:1"
		}), ""},
		{"clients off", "nsguard {\n clients off\n}", defaults(func(c *config) { c.clients = false }), ""},
		{"findings off", "nsguard {\n findings OFF\n}", defaults(func(c *config) { c.findings = false }), ""},
		{"node", "nsguard {\n node node-1.example\n endpoint http://127.0.0.1:1\n}", defaults(func(c *config) { c.podSelector, c.endpoint = "spec.nodeName=node-1.example", "http://127.0.0.1:1" }), ""},
		{"node empty", "nsguard {\n node \"\"\n}", config{}, `empty node name`},
		{"node bad", "nsguard {\n node Node_1\n}", config{}, `invalid node name "Node_1"`},
		{"node twice", "nsguard {\n node a b\n}", config{}, `after 'b'`},
		{"node with clients off", "nsguard {\n node node-1\n clients off\n endpoint http://127.0.0.1:1\n}", config{}, `'clients off' and 'node' cannot work together`},
		{"node without a view", "nsguard {\n node node-1\n}", config{}, `'node' needs the cluster view`},
		{"findings bad", "nsguard {\n findings maybe\n}", config{}, `unknown findings value "maybe"`},
		{"namespace_events", "nsguard {\n namespace_events\n endpoint http://127.0.0.1:1\n}", defaults(func(c *config) { c.namespaceEvents, c.endpoint = true, "http://127.0.0.1:1" }), ""},
		{"namespace_events with a value", "nsguard {\n namespace_events 10m\n}", config{}, `Wrong argument count or unexpected line ending after '10m'`},
		{"namespace_events with findings off", "nsguard {\n namespace_events\n findings off\n}", config{}, `'findings off' and 'namespace_events' cannot work together`},
		{"findings twice", "nsguard {\n findings on\n findings off\n}", config{}, `property "findings" given twice`},
		{"events", "nsguard {\n events\n endpoint http://127.0.0.1:1\n}", defaults(func(c *config) { c.events, c.endpoint = 10*time.Minute, "http://127.0.0.1:1" }), ""},
		{"events every hour", "nsguard {\n events 1h\n endpoint http://127.0.0.1:1\n}", defaults(func(c *config) { c.events, c.endpoint = time.Hour, "http://127.0.0.1:1" }), ""},
		{"endpoint", "nsguard {\n endpoint http://127.0.0.1:8080\n}", defaults(func(c *config) { c.endpoint = "http://127.0.0.1:8080" }), ""},
		{"log limits", "nsguard {\n log_interval 5m\n log_limit 50\n}", defaults(func(c *config) { c.logInterval = 5 * time.Minute; c.logLimit = 50 }), ""},

		{"unknown property", "nsguard {\n mdoe refuse\n}", config{}, `unknown property "mdoe"`},
		{"missing mode", "nsguard {\n mode\n}", config{}, `after 'mode'`},
		{"two modes", "nsguard {\n mode log refuse\n}", config{}, `after 'refuse'`},
		{"bad mode", "nsguard {\n mode block\n}", config{}, `unknown mode "block"`},
		{"bad endpoint_shadows", "nsguard {\n endpoint_shadows block\n}", config{}, `unknown endpoint_shadows "block"`},
		{"endpoint_shadows refuse in mode log", "nsguard {\n endpoint_shadows refuse\n endpoint http://127.0.0.1:1\n}", config{}, `'endpoint_shadows refuse' needs 'mode refuse'`},
		{"clients off with allow client", "nsguard {\n clients off\n allow client kube-system\n endpoint http://127.0.0.1:1\n}", config{}, `'clients off' and 'allow client' cannot work together`},
		{"allow client without a view", "nsguard {\n allow client kube-system\n}", config{}, `'allow client' needs the cluster view`},
		{"endpoint_shadows refuse without a view", "nsguard {\n mode refuse\n endpoint_shadows refuse\n}", config{}, `'endpoint_shadows refuse' needs the cluster view, and this CoreDNS runs outside a cluster: add 'kubeconfig PATH' or 'endpoint URL'`},
		{"events without a view", "nsguard {\n events\n}", config{}, `'events' needs the cluster view`},
		{"events with clients off", "nsguard {\n events\n clients off\n endpoint http://127.0.0.1:1\n}", config{}, `'clients off' and 'events' cannot work together`},
		{"bad events interval", "nsguard {\n events soon\n}", config{}, `invalid events interval "soon"`},
		{"events with two values", "nsguard {\n events 1m 2m\n}", config{}, `after '2m'`},
		{"bad rcode", "nsguard {\n rcode SERVFAIL\n}", config{}, `unknown rcode "SERVFAIL"`},
		{"missing rcode", "nsguard {\n rcode\n}", config{}, `after 'rcode'`},
		{"mode twice", "nsguard {\n mode log\n mode refuse\n}", config{}, `property "mode" given twice`},
		{"allow without names", "nsguard {\n allow namespace\n}", config{}, `after 'namespace'`},
		{"allow unknown kind", "nsguard {\n allow service my-app\n}", config{}, `unknown allow kind "service"`},
		{"allow bad client namespace", "nsguard {\n allow client kube_system\n}", config{}, `invalid namespace name "kube_system"`},
		{"bad clients", "nsguard {\n clients maybe\n}", config{}, `unknown clients value "maybe"`},
		{"bad endpoint", "nsguard {\n endpoint 10.0.0.1:6443\n}", config{}, `invalid endpoint "10.0.0.1:6443"`},
		{"kubeconfig missing file", "nsguard {\n kubeconfig /nonexistent/kubeconfig\n}", config{}, `kubeconfig "/nonexistent/kubeconfig"`},
		{"kubeconfig too many", "nsguard {\n kubeconfig a b c\n}", config{}, `after 'c'`},
		{"allow bad name", "nsguard {\n allow namespace my_app\n}", config{}, `invalid namespace name "my_app"`},
		{"bad log_interval", "nsguard {\n log_interval soon\n}", config{}, `invalid log_interval "soon"`},
		{"zero log_interval", "nsguard {\n log_interval 0s\n}", config{}, `invalid log_interval "0s"`},
		{"bad log_limit", "nsguard {\n log_limit 0\n}", config{}, `invalid log_limit "0"`},
		{"zone outside server block", `nsguard example.org`, config{}, `zone "example.org" is not under the server block's zones cluster.local.`},
		{"parent zone", `nsguard local`, config{}, `zone "local" is not under`},
		{"invalid zone", `nsguard http://`, config{}, `invalid zone "http://"`},
		{"zone with a bad label", `nsguard clu$ter.local`, config{}, `invalid zone "clu$ter.local": label "clu$ter"`},
		{"duplicate block", "nsguard\nnsguard", config{}, `only be used once per Server Block`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.corefile)
			c.ServerBlockKeys = []string{"cluster.local:53"}
			err := setup(c)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("want error %q, got none", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "plugin/nsguard") {
					t.Errorf("error %q, want it to name plugin/nsguard and contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			c = caddy.NewTestController("dns", tc.corefile)
			c.ServerBlockKeys = []string{"cluster.local:53"}
			got, _ := parse(c)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parse = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSetupInstallsHandler(t *testing.T) {
	c := caddy.NewTestController("dns", "nsguard {\n mode refuse\n}")
	c.ServerBlockKeys = []string{"cluster.local:53"}
	if err := setup(c); err != nil {
		t.Fatal(err)
	}
	plugins := dnsserver.GetConfig(c).Plugin
	if len(plugins) != 1 {
		t.Fatalf("%d plugins installed, want 1", len(plugins))
	}
	h, ok := plugins[0](nil).(*NSGuard)
	if !ok || h.mode != ModeRefuse || h.Name() != "nsguard" {
		t.Errorf("installed %#v, want an nsguard handler in mode refuse", plugins[0](nil))
	}
}

// A bare nsguard guards the cluster zones of the kubernetes plugin in its block, as the
// Corefiles clusters run are ".:53" blocks; without one, the block's own forward zones.
func TestClusterZones(t *testing.T) {
	k8s := func(zones ...string) plugin.Handler { return &kubernetes.Kubernetes{Zones: zones} }
	tests := []struct {
		name    string
		k8s     plugin.Handler
		keys    []string
		want    []string
		wantErr string
	}{
		{"kubeadm", k8s("cluster.local.", "in-addr.arpa.", "ip6.arpa."), []string{".:53"}, []string{"cluster.local."}, ""},
		{"two cluster zones", k8s("Cluster.Local.", "example.org.", "10.in-addr.arpa."), []string{".:53"}, []string{"cluster.local.", "example.org."}, ""},
		{"node-local cache", nil, []string{"cluster.local:53"}, []string{"cluster.local."}, ""},
		{"several blocks keys", nil, []string{"cluster.local:53", "in-addr.arpa:53", ".:53"}, []string{"cluster.local."}, ""},
		{"root without kubernetes", nil, []string{".:53"}, nil, `no cluster zone to guard in server block ".:53"`},
		{"reverse without kubernetes", nil, []string{"in-addr.arpa:53"}, nil, `name the cluster zone, as in "nsguard cluster.local"`},
		{"kubernetes of reverse zones only", k8s("in-addr.arpa."), []string{".:53"}, nil, "no kubernetes plugin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := clusterZones(tc.k8s, tc.keys)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestServerAddrs(t *testing.T) {
	tests := []struct {
		hosts []string
		port  string
		want  []string
	}{
		{[]string{""}, "53", []string{"dns://:53"}},
		{[]string{"127.53.1.1", "::1"}, "1053", []string{"dns://127.53.1.1:1053", "dns://[::1]:1053"}},
	}
	for _, tc := range tests {
		conf := &dnsserver.Config{ListenHosts: tc.hosts, Port: tc.port, Transport: "dns"}
		if got := serverAddrs(conf); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("serverAddrs(%v, %s) = %v, want %v", tc.hosts, tc.port, got, tc.want)
		}
	}
}
