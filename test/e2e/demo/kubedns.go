package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/kubedns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

const (
	kubeDNSIP = "127.53.20.3" // the kube-dns stand-in
	guardIP   = "127.53.20.2" // CoreDNS with nsguard in mode refuse, forwarding cluster.local to it
	// lookups: kube-dns's answers are random, and glibc fails on about one in five.
	lookups      = 60
	lookupFailed = "lookup failed"
)

// kubeDNS shows the incident as it happened: on kube-dns the namespace answers with its
// ExternalName Services, differently from one lookup to the next.
func (d *demo) kubeDNS() error {
	d.header("The same cluster on kube-dns, as in the incident")
	c, err := model.LoadLive(d.ctx, d.cp.Clientset())
	if err != nil {
		return err
	}
	legacy, err := kubedns.Start(kubeDNSIP+":53", c, dnsIP+":53")
	if err != nil {
		return err
	}
	defer legacy.Close()
	conf := filepath.Join(d.work, "resolv-kube-dns.conf")
	if err := resolvers.PodResolvConf(conf, kubeDNSIP, cluster.ClientNamespace); err != nil {
		return err
	}
	d.say(`Some clusters still run kube-dns. It answers my-app.svc.cluster.local with the ExternalName
Services of namespace my-app: one CNAME, to other-app-1 or other-app-2 at random, and the addresses
of both, in random order. Each resolver looks my-app up %d times through it:`, lookups)
	got, err := d.tally(conf)
	if err != nil {
		return err
	}
	one, two := named(cluster.OtherApp1IP), named(cluster.OtherApp2IP)
	for _, k := range []resolvers.Kind{resolvers.Musl, resolvers.Go} {
		if got[k][one+", "+two] != lookups {
			return fmt.Errorf("expected %v to get both wrong addresses every time, it got %v", k, got[k])
		}
	}
	g := got[resolvers.Glibc]
	if g[one] == 0 || g[two] == 0 || g[lookupFailed] == 0 || g[one]+g[two]+g[lookupFailed] != lookups {
		return fmt.Errorf("expected glibc to get each wrong address, and to fail some lookups; it got %v", g)
	}
	corp := named(coredns.CorpIP)
	if a := got[resolvers.CAres]; a[one] == 0 || a[two] == 0 || a[corp] == 0 || a[one]+a[two]+a[corp] != lookups {
		return fmt.Errorf("expected c-ares to get each wrong address, and my-app.corp.example some of the time; it got %v", a)
	}
	d.say(`That is the incident: the login check reached other-app-1 one time and other-app-2 the next,
and users were logged out. glibc also fails outright when the address comes before the CNAME;
c-ares then reads the answer as empty and goes on, to my-app.corp.example.
Now a CoreDNS with nsguard in mode refuse in front of kube-dns, as a node-local cache would be:`)

	dir := filepath.Join(d.work, "guard")
	if err := mkdir(dir); err != nil {
		return err
	}
	cfg := coredns.Config{IP: guardIP, ZoneDir: filepath.Join(d.work, "coredns"), Forward: legacy.Addr(), NSGuard: "nsguard {\n        mode refuse\n    }"}
	guard, err := coredns.Start(d.ctx, d.corednsBin, dir, guardIP, cfg.Corefile(), "", "cluster.local")
	if err != nil {
		return err
	}
	defer guard.Stop()
	conf = filepath.Join(d.work, "resolv-guard.conf")
	if err := resolvers.PodResolvConf(conf, guardIP, cluster.ClientNamespace); err != nil {
		return err
	}
	if got, err = d.tally(conf); err != nil {
		return err
	}
	for _, k := range resolvers.Kinds {
		if got[k][named(coredns.CorpIP)] != lookups {
			return fmt.Errorf("expected %v to reach %s every time, it got %v", k, named(coredns.CorpIP), got[k])
		}
	}
	d.say(`No lookup reaches a wrong app: every resolver goes on past the namespace, every time.`)
	return nil
}

// tally looks my-app up lookups times with each resolver and prints what each got, and how often.
func (d *demo) tally(resolvConf string) (map[resolvers.Kind]map[string]int, error) {
	out := map[resolvers.Kind]map[string]int{}
	for _, k := range resolvers.Kinds {
		out[k] = map[string]int{}
		for range lookups {
			r, err := d.clients.Lookup(d.ctx, k, resolvConf, "my-app")
			if err != nil {
				return nil, err
			}
			got := lookupFailed
			if r.OK() {
				got = result(r)
			}
			out[k][got]++
		}
		var parts []string
		for got, n := range out[k] {
			parts = append(parts, fmt.Sprintf("%2d× %s", n, got))
		}
		slices.Sort(parts)
		d.show(fmt.Sprintf("%-38s %s", kindLabel[k], strings.Join(parts, "\n"+strings.Repeat(" ", 39))))
	}
	return out, nil
}
