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

	"github.com/nsguard/nsguard/test/e2e/kubedns"
)

// 127.53.0.1:53 is this suite's own: stub resolvers only use port 53, and
// other servers on this machine sit on 127.0.0.1:53.
const serverIP = "127.53.0.1"

// TestIncident replays the incident through real glibc, musl and Go
// resolvers: a pod in new-namespace-1 looks up `my-app`, which falls through
// its search list to the legacy namespace `my-app` on a kube-dns.
func TestIncident(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err) // a missing tool fails the suite, never skips it
	}
	srv, err := kubedns.Start(serverIP + ":53")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hostConf, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	conf := func(ns string) string {
		p := filepath.Join(dir, ns+".resolv.conf")
		if err := PodResolvConf(p, serverIP, ns); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ns1, ns2 := conf("new-namespace-1"), conf("new-namespace-2")

	lookup := func(t *testing.T, k Kind, rc, name string) Result {
		t.Helper()
		r, err := c.Lookup(ctx, k, rc, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v %s -> %+v", k, name, r)
		return r
	}

	// glibc follows the CNAME and keeps only A records owned by its target;
	// musl and Go take every A record. The stand-in shuffles the A records,
	// so look up several times to see both orders.
	trapWant := map[Kind][]string{
		Glibc: {kubedns.Target1IP},
		Musl:  {kubedns.Target1IP, kubedns.Target2IP},
		Go:    {kubedns.Target1IP, kubedns.Target2IP},
	}
	// Each resolver's own wording for "this name does not exist".
	nxText := map[Kind]string{
		Glibc: "Name or service not known",
		Musl:  "Name does not resolve",
		Go:    "no such host",
	}
	for _, k := range Kinds {
		t.Run(k.String(), func(t *testing.T) {
			for i := 0; i < 4; i++ {
				if r := lookup(t, k, ns1, "my-app"); !slices.Equal(r.Addrs, trapWant[k]) {
					t.Errorf("my-app from new-namespace-1: got %+v, want %v", r, trapWant[k])
				}
			}
			// The Service the pod meant resolves on the first search candidate.
			if r := lookup(t, k, ns2, "my-app"); !slices.Equal(r.Addrs, []string{kubedns.FixedIP}) {
				t.Errorf("my-app from new-namespace-2: got %+v, want %s", r, kubedns.FixedIP)
			}
			// NXDOMAIN on every candidate: an error, never an address.
			if r := lookup(t, k, ns1, "does-not-exist"); r.OK() || !strings.Contains(r.Err, nxText[k]) {
				t.Errorf("does-not-exist: got %+v, want error containing %q", r, nxText[k])
			}
		})
	}

	// The pod view must never leak into the host.
	if now, err := os.ReadFile("/etc/resolv.conf"); err != nil || !bytes.Equal(now, hostConf) {
		t.Errorf("host /etc/resolv.conf changed (err %v)", err)
	}

	// The raw answer the resolvers saw, over both transports.
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
