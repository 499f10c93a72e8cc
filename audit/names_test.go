package audit_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/nsguard/nsguard/audit"
)

// namesOnly hides the model's answers, as the live view has none: the checks must then
// decide from the names alone.
type namesOnly struct{ Names }

// TestChecksWithoutAnswers: over names alone, as the plugin runs them, the checks the
// live findings report find what Audit finds, with the same severity.
func TestChecksWithoutAnswers(t *testing.T) {
	for _, paths := range [][]string{
		{"testdata/incident.yaml"},
		{"testdata/incident.yaml", "testdata/blog-fix.yaml"},
		{"testdata/shadow-list.yaml"},
		{"testdata/broad/aliases.yaml"},
		{"testdata/broad/reserved.json"},
		{"testdata/broad/near-misses.yaml"},
	} {
		t.Run(strings.Join(paths, "+"), func(t *testing.T) {
			c := load(t, paths...)
			var want, got []string
			for _, f := range auditOf(c, "cluster.local") {
				if f.Check != CheckEndpointShadow && f.Check != CheckAliasDangling {
					want = append(want, key(f)+" "+string(f.Severity))
				}
			}
			r := namesOnly{c.Names()}
			var fs []Finding
			for _, ns := range c.Namespaces() {
				fs = append(fs, NamespaceFindings(r, ns.Name, "cluster.local.")...)
			}
			for _, s := range c.Services() {
				if f, ok := AliasFinding(r, s.Namespace, s.Name, "cluster.local"); ok {
					if f.CoreDNS != nil || f.KubeDNS != nil {
						t.Errorf("%s: answers without an Answerer", key(f))
					}
					fs = append(fs, f)
				}
			}
			Sort(fs)
			for _, f := range fs {
				if f.Check != CheckAliasDangling {
					got = append(got, key(f)+" "+string(f.Severity))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("over names alone\n  %s\nAudit\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}
