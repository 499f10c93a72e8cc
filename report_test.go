package nsguard

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/logline"
)

// TestReportLineParses: the line the plugin logs, as CoreDNS's log writes it, is what
// nsguard offenders reads.
func TestReportLineParses(t *testing.T) {
	buf := captureLog(t)

	tests := []struct {
		name     string
		mode     Mode
		upstream string
		want     logline.Entry // the fields compared
	}{
		{"log", ModeLog, "kube-dns", logline.Entry{Kind: logline.Apex, Subject: "my-app", Client: "10.240.0.1",
			Question: "My-App.svc.cluster.local. A", Typed: "my-app", Answer: answerRecords, Action: actionLogged}},
		{"refuse", ModeRefuse, "kubernetes", logline.Entry{Kind: logline.Apex, Subject: "my-app", Client: "10.240.0.1",
			Question: "My-App.svc.cluster.local. A", Typed: "my-app", Answer: answerNoData, Action: actionRefused}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			g := New(testConfig([]string{"cluster.local."}, tc.mode, dns.RcodeNameError))
			g.Next = upstreams[tc.upstream]()
			g.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), query("My-App.svc.cluster.local.", dns.TypeA, noEDNS))
			line := strings.TrimSuffix(buf.String(), "\n")
			if i := strings.Index(line, logline.Prefix); i >= 0 {
				line = line[i:] // after Go's log date
			}
			e, err := logline.Parse(line)
			if err != nil {
				t.Fatalf("%v: %q", err, line)
			}
			if e.Fix == "" {
				t.Errorf("no fix: %q", line)
			}
			e.Records, e.Fix = "", ""
			if e != tc.want {
				t.Errorf("got  %+v\nwant %+v", e, tc.want)
			}
		})
	}
}
