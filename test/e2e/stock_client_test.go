//go:build e2e

package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// transport is how one question is sent: over UDP or TCP, with or without an EDNS0 OPT record.
type transport struct {
	tcp, edns bool
}

func (tr transport) String() string {
	s := "udp"
	if tr.tcp {
		s = "tcp"
	}
	if tr.edns {
		s += "+edns"
	}
	return s
}

var transports = []transport{{}, {edns: true}, {tcp: true}, {tcp: true, edns: true}}

// exchange sends one question from inside c's network namespace to server:53, as dig run in the
// pod would, and returns the answer as it came off the wire.
func (c *client) exchange(ctx context.Context, server, name string, qtype uint16, tr transport) ([]byte, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if tr.edns {
		m.SetEdns0(1232, false)
	}
	q, err := m.Pack()
	if err != nil {
		return nil, err
	}
	network := "udp"
	if tr.tcp {
		network = "tcp"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := c.pod.Dial(ctx, network, net.JoinHostPort(server, "53"))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	var res []byte
	if tr.tcp {
		if _, err := conn.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)); err != nil {
			return nil, err
		}
		var n [2]byte
		if _, err := io.ReadFull(conn, n[:]); err != nil {
			return nil, err
		}
		res = make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(conn, res); err != nil {
			return nil, err
		}
	} else {
		if _, err := conn.Write(q); err != nil {
			return nil, err
		}
		buf := make([]byte, 65535)
		k, err := conn.Read(buf)
		if err != nil {
			return nil, err
		}
		res = buf[:k]
	}
	if len(res) < 12 || binary.BigEndian.Uint16(res) != m.Id {
		return nil, fmt.Errorf("answer to %s %s is not for our query: % x", name, dns.TypeToString[qtype], res[:min(len(res), 12)])
	}
	return res, nil
}

// ask sends one question over UDP from c's namespace to server and returns the parsed answer.
func (c *client) ask(t *testing.T, server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	raw, err := c.exchange(t.Context(), server, name, qtype, transport{})
	if err != nil {
		t.Fatalf("%s asking %s %s: %v", c.pod.Name, name, dns.TypeToString[qtype], err)
	}
	m := new(dns.Msg)
	if err := m.Unpack(raw); err != nil {
		t.Fatal(err)
	}
	return m
}

// expect looks name up from c with every resolver, and checks each got want[kind] (addresses,
// space-separated and sorted, or failed).
func (c *client) expect(t *testing.T, name string, want map[resolvers.Kind]string) {
	t.Helper()
	for _, kind := range resolvers.Kinds {
		res, err := env.clients.LookupInPod(t.Context(), c.pod, kind, c.resolvConf, name)
		if err != nil {
			t.Fatalf("%s lookup of %s from %s: %v", kind, name, c.pod.Name, err)
		}
		got := strings.Join(res.Addrs, " ")
		if !res.OK() {
			got = failed
		}
		if got != want[kind] {
			t.Errorf("%s looking up %q from %s got %q (%s), want %q", kind, name, c.pod.Name, got, res.Err, want[kind])
		}
	}
}

// guardLines are nsguard's log lines so far.
func guardLines(srv *coredns.Server) []string {
	var lines []string
	for _, l := range strings.Split(srv.Log(), "\n") {
		if strings.Contains(l, "plugin/nsguard: ") && strings.Contains(l, "answer through namespace") {
			lines = append(lines, l)
		}
	}
	return lines
}

// nsguardWarnings are every line nsguard logged as a warning: apexes and endpoint shadows.
func nsguardWarnings(srv *coredns.Server) []string {
	var lines []string
	for _, l := range strings.Split(srv.Log(), "\n") {
		if strings.Contains(l, "[WARNING] plugin/nsguard: ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// waitGuardLine waits up to 5 s (a line is written after the answer) for an nsguard line that
// holds every one of want.
func waitGuardLine(t *testing.T, srv *coredns.Server, want ...string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		for _, l := range guardLines(srv) {
			all := true
			for _, w := range want {
				all = all && strings.Contains(l, w)
			}
			if all {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Errorf("no nsguard line holds all of %q; nsguard logged:\n%s", want, strings.Join(guardLines(srv), "\n"))
	}
}

// cacheHits sums coredns_cache_hits_total over every label: answers the cache plugin served.
func cacheHits(t *testing.T, srv *coredns.Server) float64 {
	t.Helper()
	return coredns.Sum(scrape(t, srv), "coredns_cache_hits_total")
}

// apexCounts sums coredns_nsguard_namespace_apex_answers_total over all labels but action.
func apexCounts(t *testing.T, srv *coredns.Server) map[string]float64 {
	t.Helper()
	return coredns.SumBy(scrape(t, srv), apexMetric, "action")
}
