//go:build e2e

package resolvers

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/test/e2e/dnsserve"
	"github.com/nsguard/nsguard/test/e2e/kubedns"
)

// 127.53.0.1:53 is this suite's own: stub resolvers only use port 53, and
// other servers on this machine sit on 127.0.0.1:53.
const serverIP = "127.53.0.1"

// TestLookups drives real glibc, musl, Go and c-ares resolvers through a pod's search list against
// the kube-dns stand-in holding the incident: what each does with the namespace apex's
// answer is the e2e suite's TestIncidentKubeDNS; here, that the harness reports answers
// and failures as each resolver words them.
func TestLookups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err) // a missing tool fails the suite, never skips it
	}
	incident, err := model.LoadFiles([]string{"../../../audit/testdata/incident.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The last search domain, corp.example, is outside the cluster: an upstream that knows no name.
	upstream, err := dnsserve.Start("127.0.0.1:0", dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		w.WriteMsg(new(dns.Msg).SetRcode(r, dns.RcodeNameError))
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.Close()
	srv, err := kubedns.Start(serverIP+":53", incident, upstream.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hostConf, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(t.TempDir(), "resolv.conf")
	if err := PodResolvConf(rc, serverIP, "new-namespace-2"); err != nil {
		t.Fatal(err)
	}

	// Each resolver's own wording for "this name does not exist".
	nxText := map[Kind]string{
		Glibc: "Name or service not known",
		Musl:  "Name does not resolve",
		Go:    "no such host",
		CAres: "Domain name not found",
	}
	for _, k := range Kinds {
		t.Run(k.String(), func(t *testing.T) {
			// The Service meant resolves on the first search candidate.
			r, err := c.Lookup(ctx, k, rc, "my-app")
			if err != nil || !slices.Equal(r.Addrs, []string{"10.96.0.20"}) {
				t.Errorf("my-app from new-namespace-2: got %+v (%v), want 10.96.0.20", r, err)
			}
			// NXDOMAIN on every candidate: an error, never an address.
			r, err = c.Lookup(ctx, k, rc, "does-not-exist")
			if err != nil || r.OK() || !strings.Contains(r.Err, nxText[k]) {
				t.Errorf("does-not-exist: got %+v (%v), want an error containing %q", r, err, nxText[k])
			}
		})
	}

	// The pod view must never leak into the host.
	if now, err := os.ReadFile("/etc/resolv.conf"); err != nil || !bytes.Equal(now, hostConf) {
		t.Errorf("host /etc/resolv.conf changed (err %v)", err)
	}

	// The raw answer, over both transports: a CNAME and both targets' addresses.
	for _, q := range []func(context.Context, string, string, uint16) (*dns.Msg, error){Query, QueryTCP} {
		m, err := q(ctx, srv.Addr(), "my-app.svc.cluster.local", dns.TypeA)
		if err != nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 3 {
			t.Errorf("direct query: %v %v", m, err)
		}
	}
}

func TestPodResolvConf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	if err := PodResolvConf(p, "127.53.0.1:53", "x"); err == nil {
		t.Error("accepted a nameserver with a port")
	}
	if err := PodResolvConf(p, serverIP, "ns"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	want := "search ns.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 127.53.0.1\noptions ndots:5\n"
	if string(b) != want {
		t.Errorf("got %q", b)
	}
}
