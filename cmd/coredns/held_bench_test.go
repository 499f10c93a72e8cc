package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coredns/coredns/test"

	"github.com/miekg/dns"
)

// BenchmarkServerCache asks a real CoreDNS server, built here, over UDP, as the stock
// Corefiles run it: errors, prometheus, cache, loop and loadbalance, with file in place of
// kubernetes. Each query runs on a goroutine of its own whose stack starts small, so where
// the chain's stack grows, and how many frames it copies then, counts here as it does in a
// cluster, which the handler benchmarks cannot see. cpu-ns/op is the process's CPU per
// query, the client's included; any, which does nothing with these queries, is the floor.
func BenchmarkServerCache(b *testing.B) {
	dir := b.TempDir()
	zone := filepath.Join(dir, "db.cluster.local")
	if err := os.WriteFile(zone, []byte(benchClusterZone()), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, mix := range []struct {
		name string
		apex int // of every 10 questions, namespace apexes
	}{
		{"incident", 2},
		{"everyday", 1},
	} {
		queries := benchQueries(mix.apex)
		for _, h := range []struct{ name, block string }{
			{"stock", ""},
			{"any", "any"},
			{"nsguard-log", "nsguard"},
			{"nsguard-refuse", "nsguard {\n        mode refuse\n    }"},
		} {
			b.Run("mix="+mix.name+"/handler="+h.name, func(b *testing.B) {
				srv, udp, _, err := test.CoreDNSServerAndPorts(fmt.Sprintf(`cluster.local:0 {
    errors
    %s
    file %s
    prometheus 127.0.0.1:0
    cache 30
    loop
    loadbalance
}
`, h.block, zone))
				if err != nil {
					b.Fatalf("could not start CoreDNS: %v", err)
				}
				defer srv.Stop()
				conn, err := net.Dial("udp", udp)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				buf := make([]byte, 1232)
				ask := func(q []byte) {
					if _, err := conn.Write(q); err != nil {
						b.Fatal(err)
					}
					conn.SetReadDeadline(time.Now().Add(2 * time.Second))
					if _, err := conn.Read(buf); err != nil {
						b.Fatal(err)
					}
				}
				for _, q := range queries { // fill the cache
					ask(q)
				}
				b.ReportAllocs()
				start := cpuTime()
				i := 0
				for b.Loop() {
					ask(queries[i%len(queries)])
					i++
				}
				b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// benchQueries makes 2,000 packed questions of which apex in 10 are namespace apexes, A and
// AAAA; the rest Service names and search candidates answered NXDOMAIN.
func benchQueries(apex int) [][]byte {
	var qs [][]byte
	for i := range 2000 {
		ns := "bench-" + strconv.Itoa(i%benchNamespaces)
		var name string
		switch k := i % 10; {
		case k < apex:
			name = ns + ".svc.cluster.local."
		case k < 6:
			name = "svc-" + strconv.Itoa(i%5) + "." + ns + ".svc.cluster.local."
		case k < 8:
			name = "api-" + strconv.Itoa(i) + ".github.com.svc.cluster.local."
		default:
			name = "nope-" + strconv.Itoa(i) + "." + ns + ".svc.cluster.local."
		}
		m := new(dns.Msg)
		m.SetQuestion(name, []uint16{dns.TypeA, dns.TypeAAAA}[i/10%2])
		m.SetEdns0(1232, false)
		p, err := m.Pack()
		if err != nil {
			panic(err)
		}
		qs = append(qs, p)
	}
	return qs
}

const benchNamespaces = 200

// benchClusterZone holds benchNamespaces namespaces of five Services each.
func benchClusterZone() string {
	var b strings.Builder
	b.WriteString("$ORIGIN cluster.local.\n@ 3600 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5\n")
	b.WriteString("@ 3600 IN NS ns.dns.cluster.local.\nns.dns 3600 IN A 10.96.0.10\n")
	for n := range benchNamespaces {
		for s := range 5 {
			fmt.Fprintf(&b, "svc-%d.bench-%d.svc 5 IN A 10.96.%d.%d\n", s, n, n, s+1)
		}
	}
	return b.String()
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
