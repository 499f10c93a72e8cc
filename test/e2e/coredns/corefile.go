package coredns

import (
	"bytes"
	"os"
	"path/filepath"
	"text/template"
)

// Addresses the upstream stand-in answers.
const (
	CorpIP      = "198.51.100.7" // my-app.corp.example: where the pod's last search domain leads
	External1IP = "192.0.2.11"   // other-app-1.example.net, an ExternalName target outside the cluster
	External2IP = "192.0.2.12"   // other-app-2.example.net
)

// Config is one CoreDNS as the suite runs it: a cluster.local block and, beside it, a
// stand-in for the corporate upstream that knows my-app.corp.example and the ExternalName
// targets, and answers NXDOMAIN for everything else.
type Config struct {
	IP         string   // loopback address to bind, port 53
	Kubeconfig string   // for the kubernetes plugin
	Metrics    string   // host:port for the prometheus plugin; empty for none
	ZoneDir    string   // where WriteUpstreamZones wrote the stand-in's zones
	Before     []string // lines before nsguard, in plugin order: "cache 30", "autopath @kubernetes", ...
	NSGuard    string   // the nsguard directive with its block; empty for none
	After      []string // lines after nsguard, e.g. a template workaround
	Kubernetes []string // lines inside the kubernetes block, e.g. "pods verified"
	Forward    string   // if set, cluster.local is forwarded here (node-local style) instead of served by kubernetes
	Upstream   string   // if set, names kubernetes does not own (autopath's later candidates) are forwarded here
	Reload     string   // if set, the reload plugin's interval
	Flags      []string // CoreDNS's flags after -conf, such as -log-format json
}

var corefile = template.Must(template.New("Corefile").Parse(`cluster.local:53 {
    bind {{.IP}}
{{- if .Reload}}
    reload {{.Reload}}
{{- end}}
{{- if .Metrics}}
    prometheus {{.Metrics}}
{{- end}}
    errors
{{- range .Before}}
    {{.}}
{{- end}}
{{- if .NSGuard}}
    {{.NSGuard}}
{{- end}}
{{- range .After}}
    {{.}}
{{- end}}
{{- if .Forward}}
    forward . {{.Forward}}
{{- else}}
    kubernetes cluster.local {
        kubeconfig {{.Kubeconfig}}
{{- range .Kubernetes}}
        {{.}}
{{- end}}
    }
{{- if .Upstream}}
    forward . {{.Upstream}}
{{- end}}
{{- end}}
}
{{template "upstream" .}}
{{- define "upstream"}}corp.example:53 example.net:53 {
    bind {{.IP}}
    file {{.ZoneDir}}/db.corp.example corp.example
    file {{.ZoneDir}}/db.example.net example.net
}
.:53 {
    bind {{.IP}}
    template ANY ANY {
        rcode NXDOMAIN
    }
}
{{end}}`))

// Corefile renders c.
func (c Config) Corefile() string {
	var b bytes.Buffer
	if err := corefile.Execute(&b, c); err != nil {
		panic(err) // the template is fixed; an error here is a bug in it
	}
	return b.String()
}

// WriteUpstreamZones writes the stand-in upstream's zone files into dir.
func WriteUpstreamZones(dir string) error {
	zones := map[string]string{
		"db.corp.example": `$ORIGIN corp.example.
@      60 IN SOA ns.corp.example. hostmaster.corp.example. 1 7200 1800 86400 60
@      60 IN NS  ns.corp.example.
ns     60 IN A   198.51.100.1
my-app 60 IN A   ` + CorpIP + `
`,
		"db.example.net": `$ORIGIN example.net.
@           60 IN SOA ns.example.net. hostmaster.example.net. 1 7200 1800 86400 60
@           60 IN NS  ns.example.net.
ns          60 IN A   192.0.2.1
other-app-1 60 IN A   ` + External1IP + `
other-app-2 60 IN A   ` + External2IP + `
`,
	}
	for name, body := range zones {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
