//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Transparency: with nsguard, every stock Corefile answers exactly as it does without it. Two
// servers run side by side, the same Corefile with and without nsguard; each question goes to
// both back to back, from the same pod, over UDP and TCP, with and without EDNS0. In mode log
// every answer must be the same; in mode refuse every answer but the namespace apexes.
func TestStockCorefileTransparency(t *testing.T) {
	s := newStack(t)
	qs := stockQuestions()
	distinct := map[string]bool{}
	for _, q := range qs {
		distinct[strings.ToLower(q.String())] = true
	}
	if len(distinct) < 500 || len(distinct) != len(qs) {
		t.Fatalf("%d questions, %d distinct: want 500 or more, all distinct", len(qs), len(distinct))
	}
	for _, d := range distros {
		t.Run(d.name, func(t *testing.T) {
			for _, mode := range []struct{ name, line string }{{"log", guardLog}, {"refuse", guardRefuse}} {
				t.Run(mode.name, func(t *testing.T) {
					plain := s.start(t, d, d.twinListen(), "")
					guard := s.start(t, d, d.listen(), mode.line)
					s.alignSerials(t, plain.IP, guard.IP)
					c := s.compareAll(t, d, qs, plain.IP, guard.IP, mode.name == "refuse")
					counted := apexCounts(t, guard)
					t.Logf("%s, mode %s: %d questions, %d exchanges each side: %d identical, %d equal once address records were sorted (%s), "+
						"%d equal once TTLs one second apart were matched, %d namespace apex answers differing; nsguard counted %v",
						d.name, mode.name, len(qs), c.exchanges, c.identical, c.shuffled, c.sections(), c.aged, c.apexDiffering, counted)
					// Equal answers prove something only if nsguard held them: every namespace apex
					// answer must have passed through it.
					var held float64
					for _, n := range counted {
						held += n
					}
					if held < float64(c.apexExchanges) {
						t.Errorf("nsguard counted %v namespace apex answers of the %d it was asked", held, c.apexExchanges)
					}
				})
			}
		})
	}
}

// comparison counts how the answers compared.
type comparison struct {
	exchanges, identical, shuffled, aged int
	apexExchanges, apexDiffering         int
	shuffledIn                           map[string]int // by section
}

func (c comparison) sections() string {
	var parts []string
	for _, sec := range []string{"answer", "authority", "additional"} {
		if n := c.shuffledIn[sec]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d in the %s section", n, sec))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// compareAll asks every question of both servers from the web pod, the server without nsguard
// first, and compares the answers. In refuse mode a namespace apex may be refused (NXDOMAIN).
func (s *stack) compareAll(t *testing.T, d distro, qs []question, plain, guard string, refuse bool) comparison {
	t.Helper()
	c := comparison{shuffledIn: map[string]int{}}
	// seen are the owner names of records either server has answered with: a later answer that
	// holds one may come from cache, with a TTL a second older on one side.
	seen := map[string]bool{}
	mismatches := 0
	for _, q := range qs {
		for n, tr := range transports {
			pa, err := s.web.exchange(t.Context(), plain, q.name, q.qtype, tr)
			if err != nil {
				t.Fatalf("%s over %v, without nsguard: %v", q, tr, err)
			}
			if d.nodeLocal {
				// Both node-local caches share the central CoreDNS, whose cache now holds it.
				markSeen(seen, pa)
			}
			ga, err := s.web.exchange(t.Context(), guard, q.name, q.qtype, tr)
			if err != nil {
				t.Fatalf("%s over %v, with nsguard: %v", q, tr, err)
			}
			c.exchanges++
			if q.kind == "apex" {
				c.apexExchanges++
			}
			cached := n > 0 || holdsSeen(seen, pa) || holdsSeen(seen, ga)
			like, diff := compareAnswers(pa, ga, cached)
			switch like {
			case identical:
				c.identical++
			case shuffled:
				c.shuffled++
				for _, sec := range shuffledSections(pa, ga) {
					c.shuffledIn[sec]++
				}
			case aged:
				c.aged++
			default:
				if refuse && q.kind == "apex" && isRefusal(ga) {
					c.apexDiffering++
					break
				}
				mismatches++
				if mismatches <= 5 {
					t.Errorf("%s over %v (%s): nsguard changed the answer\n%s", q, tr, q.kind, diff)
				}
			}
			markSeen(seen, pa)
			markSeen(seen, ga)
		}
	}
	if mismatches > 5 {
		t.Errorf("%d answers differed in all", mismatches)
	}
	return c
}

// isRefusal reports nsguard's refusal: NXDOMAIN with no answer records.
func isRefusal(raw []byte) bool {
	m := new(dns.Msg)
	return m.Unpack(raw) == nil && m.Rcode == dns.RcodeNameError && len(m.Answer) == 0
}

func markSeen(seen map[string]bool, raw []byte) {
	m := new(dns.Msg)
	if m.Unpack(raw) != nil {
		return
	}
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			seen[strings.ToLower(rr.Header().Name)] = true
		}
	}
}

func holdsSeen(seen map[string]bool, raw []byte) bool {
	m := new(dns.Msg)
	if m.Unpack(raw) != nil {
		return false
	}
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			if rr.Header().Rrtype != dns.TypeOPT && seen[strings.ToLower(rr.Header().Name)] {
				return true
			}
		}
	}
	return false
}

// shuffledSections names the sections whose address records came in a different order.
func shuffledSections(a, b []byte) []string {
	ma, mb := new(dns.Msg), new(dns.Msg)
	if ma.Unpack(a) != nil || mb.Unpack(b) != nil {
		return nil
	}
	var out []string
	for i, p := range [][2][]dns.RR{{ma.Answer, mb.Answer}, {ma.Ns, mb.Ns}, {ma.Extra, mb.Extra}} {
		if len(p[0]) != len(p[1]) {
			continue
		}
		for k := range p[0] {
			if addrKey(p[0][k]) != addrKey(p[1][k]) {
				out = append(out, []string{"answer", "authority", "additional"}[i])
				break
			}
		}
	}
	return out
}

// serialChanges names the Services alignSerials makes, one per try.
var serialChanges atomic.Int64

// alignSerials makes the servers' SOA serials the same. The kubernetes plugin's serial is the
// second in which it last saw a Service or EndpointSlice change, so two servers that synced in
// different seconds differ; one change that both see in the same second aligns them. That is
// cluster state, not an answer, being aligned: nothing changes while the answers are compared.
func (s *stack) alignSerials(t *testing.T, servers ...string) {
	t.Helper()
	cs := env.cp.Clientset()
	probe := 0
	serial := func(server string) uint32 {
		probe++ // a new name each time, so that no cache answers with an older serial
		m := s.web.ask(t, server, fmt.Sprintf("probe-%d.serial.cluster.local.", probe), dns.TypeA)
		for _, rr := range m.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				return soa.Serial
			}
		}
		return 0
	}
	for range 5 {
		name := fmt.Sprintf("serial-%d", serialChanges.Add(1))
		before := uint32(time.Now().Unix())
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "serial.example.net"}}
		if _, err := cs.CoreV1().Services("default").Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.CoreV1().Services("default").Delete(context.Background(), name, deleteNow) })
		var got []uint32
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got = nil
			for _, srv := range servers {
				got = append(got, serial(srv))
			}
			return slices.Min(got) >= before, nil
		}); err != nil {
			t.Fatalf("SOA serials %v: the change of %d never reached every server", got, before)
		}
		if slices.Max(got) == slices.Min(got) {
			return
		}
		t.Logf("SOA serials %v after one change: trying again", got)
	}
	t.Fatalf("the SOA serials of %v never lined up", servers)
}
