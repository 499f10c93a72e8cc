//go:build e2e

package e2e

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/test/e2e/kubedns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// predicts checks that explain, run on the live cluster, predicts want for each resolver of a
// pod in from, with the suite's resolv.conf, looking name up through CoreDNS; refuse is the
// rcode of nsguard in mode refuse ("" for none, or mode log), upstream ("ip:port") answers the
// names outside the zone. The tests check want against the real resolvers: so explain is
// checked against them too.
func predicts(t *testing.T, name, from, refuse, upstream string, want map[resolvers.Kind]string) {
	t.Helper()
	e := explainLive(t, name, from, refuse, upstream)
	got := map[resolvers.Kind]string{}
	for k, r := range byKind(t, e.CoreDNS) {
		if r.OneOf || r.MayFail || r.OrNext != nil {
			t.Fatalf("explain predicts more than one outcome for %s: %+v", r.Resolver, r)
		}
		got[k] = predicted(r, r.Addresses)
	}
	if !maps.Equal(got, want) {
		t.Errorf("explain predicts %v for %s from %s (refuse %q), the resolvers got %v\n%s", got, name, from, refuse, want, e.CoreDNS.Verdict)
	}
}

// kubeDNSPredicts is every outcome explain allows each resolver looking name up from from
// through kube-dns, whose answers are random, with upstream answering the names outside the zone.
func kubeDNSPredicts(t *testing.T, name, from, upstream string) map[resolvers.Kind][]string {
	t.Helper()
	out := map[resolvers.Kind][]string{}
	for k, r := range byKind(t, explainLive(t, name, from, "", upstream).KubeDNS) {
		out[k] = outcomes(r)
	}
	return out
}

func explainLive(t *testing.T, name, from, refuse, upstream string) model.Explanation {
	t.Helper()
	c, err := model.LoadLive(t.Context(), env.cp.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	return model.Explain(c, name, from, model.ExplainOptions{Search: resolvers.PodSearch(from), Refuse: refuse, Upstream: kubedns.Forwarder(upstream)})
}

// byKind are the resolvers' outcomes by the suite's resolver kinds, each of which explain models.
func byKind(t *testing.T, o model.Outcome) map[resolvers.Kind]model.ResolverOutcome {
	t.Helper()
	out := map[resolvers.Kind]model.ResolverOutcome{}
	for _, r := range o.Resolvers {
		k := slices.IndexFunc(resolvers.Kinds, func(k resolvers.Kind) bool { return k.String() == r.Resolver })
		if k < 0 {
			t.Fatalf("explain models %s, which the suite does not run", r.Resolver)
		}
		out[resolvers.Kinds[k]] = r
	}
	if len(out) != len(resolvers.Kinds) {
		t.Fatalf("explain models %d of the suite's %d resolvers", len(out), len(resolvers.Kinds))
	}
	return out
}

// outcomes lists what r allows: each address of a OneOf, a failure when it MayFail, and
// where c-ares's search ends when it goes on.
func outcomes(r model.ResolverOutcome) []string {
	var out []string
	switch {
	case r.OneOf:
		for _, a := range r.Addresses {
			out = append(out, predicted(r, []string{a}))
		}
	default:
		out = append(out, predicted(r, r.Addresses))
	}
	if r.MayFail {
		out = append(out, failed)
	}
	if r.OrNext != nil {
		out = append(out, outcomes(*r.OrNext)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// predicted is one outcome of r in the tests' terms: addrs sorted, or failed.
func predicted(r model.ResolverOutcome, addrs []string) string {
	if r.Fails {
		return failed
	}
	var ips []netip.Addr
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return a // an address not known from the cluster's objects: never what a lookup gets
		}
		ips = append(ips, ip)
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	out := make([]string, len(ips))
	for i, a := range ips {
		out[i] = a.String()
	}
	return strings.Join(slices.Compact(out), " ")
}
