package model

import (
	"os"
	"strings"
	"testing"

	"github.com/nsguard/nsguard/audit"
)

// FuzzLoad loads any manifest stream and audits and explains what it read: neither may fail
// on it, and a load error must name the stream.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"../testdata/incident.yaml", "../testdata/shadow-list.yaml", "../testdata/broad/reserved.json",
		"../testdata/broad/aliases.yaml", "../testdata/bad/bad.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(`{"apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"a"},"spec":{"type":"ExternalName","externalName":"a.svc.cluster.local"}}],"kind":"List"}`)
	f.Add(`{"kind":"EndpointSliceList","apiVersion":"discovery.k8s.io/v1","items":[{"metadata":{"name":"x","namespace":"n","labels":{"kubernetes.io/service-name":"db"}},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"hostname":"primary"}]}]}`)
	f.Add("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\nspec: {serviceName: nginx, replicas: 3}\n---\n---\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := LoadFiles([]string{"-"}, strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "<stdin>") {
				t.Fatalf("error does not name the stream: %v", err)
			}
			return
		}
		audit.Audit(c.Names(), "cluster.local")
		Explain(c, "my-app", "default", ExplainOptions{})
	})
}
