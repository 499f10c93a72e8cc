//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// How two answers to the same question compare.
type likeness int

const (
	identical likeness = iota // byte for byte, message ID set to 0
	shuffled                  // equal once address records are sorted (loadbalance)
	aged                      // equal once TTLs one second apart are matched (cache)
	different
)

// compareAnswers compares a and b, two wire answers to one question from two servers, and
// returns how alike they are. Only two normalisations are made, and only where the reason
// holds: loadbalance shuffles A and AAAA records (in every section, as CoreDNS v1.15.0's
// loadbalance does), so they are sorted within their section; and cache counts TTLs down by
// whole seconds, so when cached allows it (the answer holds data either server had cached
// before), TTLs one apart are taken as equal.
func compareAnswers(a, b []byte, cached bool) (likeness, string) {
	a, b = bytes.Clone(a), bytes.Clone(b)
	a[0], a[1], b[0], b[1] = 0, 0, 0, 0
	if bytes.Equal(a, b) {
		return identical, ""
	}
	ma, mb := new(dns.Msg), new(dns.Msg)
	if err := ma.Unpack(a); err != nil {
		return different, err.Error()
	}
	if err := mb.Unpack(b); err != nil {
		return different, err.Error()
	}
	for _, m := range []*dns.Msg{ma, mb} {
		for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
			sortAddresses(sec)
		}
	}
	if packEqual(ma, mb) {
		return shuffled, ""
	}
	if cached && matchAges(ma, mb) && packEqual(ma, mb) {
		return aged, ""
	}
	return different, fmt.Sprintf("--- one\n%v\n--- other\n%v", ma, mb)
}

// sortAddresses sorts the A and AAAA records of a section among the places they hold,
// leaving every other record where it is.
func sortAddresses(sec []dns.RR) {
	var at []int
	var addrs []dns.RR
	for i, rr := range sec {
		if t := rr.Header().Rrtype; t == dns.TypeA || t == dns.TypeAAAA {
			at = append(at, i)
			addrs = append(addrs, rr)
		}
	}
	slices.SortStableFunc(addrs, func(x, y dns.RR) int { return strings.Compare(addrKey(x), addrKey(y)) })
	for k, i := range at {
		sec[i] = addrs[k]
	}
}

// addrKey orders address records by owner and address; their TTLs may differ by an age.
func addrKey(rr dns.RR) string {
	switch rr := rr.(type) {
	case *dns.A:
		return rr.Hdr.Name + " " + rr.A.String()
	case *dns.AAAA:
		return rr.Hdr.Name + " " + rr.AAAA.String()
	}
	return rr.String()
}

// matchAges gives b the TTLs of a wherever the same record differs by one second, and reports
// whether the sections line up at all.
func matchAges(a, b *dns.Msg) bool {
	pairs := [][2][]dns.RR{{a.Answer, b.Answer}, {a.Ns, b.Ns}, {a.Extra, b.Extra}}
	for _, p := range pairs {
		if len(p[0]) != len(p[1]) {
			return false
		}
		for i := range p[0] {
			ha, hb := p[0][i].Header(), p[1][i].Header()
			if ha.Rrtype == dns.TypeOPT || ha.Rrtype != hb.Rrtype || ha.Name != hb.Name {
				continue // OPT's TTL field holds flags, not an age
			}
			if d := int64(ha.Ttl) - int64(hb.Ttl); d >= -1 && d <= 1 {
				hb.Ttl = ha.Ttl
			}
		}
	}
	return true
}

func packEqual(a, b *dns.Msg) bool {
	pa, err1 := a.Pack()
	pb, err2 := b.Pack()
	return err1 == nil && err2 == nil && bytes.Equal(pa, pb)
}
