package jsonlog

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	clog "github.com/coredns/coredns/plugin/pkg/log"
)

// TestRecordsWholeBesideCoreDNS: nsguard's records and CoreDNS's own, written at once into
// one pipe, come out as whole JSON records, each with its level and typed fields, and none
// longer than a pipe writes whole, however long a value.
func TestRecordsWholeBesideCoreDNS(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := clog.Configure("json", w); err != nil {
		t.Fatal(err)
	}
	defer clog.Configure("text", os.Stderr)
	defer SetOutput(SetOutput(w))
	if !On() {
		t.Fatal("On() = false under json")
	}
	coredns := clog.NewWithPlugin("kubernetes")
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			Warn("answer through namespace \"my-app\"", slog.String("typed", "my-app"), slog.Uint64("repeats", uint64(i+1)),
				slog.String("records", strings.Repeat("x", 3000)), slog.String("fix", strings.Repeat("ß", 2000)))
		}()
		go func() {
			defer wg.Done()
			coredns.Warning(strings.Repeat("k", 1000))
		}()
	}
	go func() { wg.Wait(); w.Close() }()
	ours, theirs := 0, 0
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("not one record: %v: %q", err, sc.Text())
		}
		if rec["level"] != "WARN" {
			t.Errorf("level %v, want WARN", rec["level"])
		}
		switch rec["plugin"] {
		case "nsguard":
			ours++
			if len(sc.Bytes())+1 > MaxRecord {
				t.Errorf("a record of %d bytes", len(sc.Bytes())+1)
			}
			if _, ok := rec["repeats"].(float64); !ok || rec["typed"] != "my-app" {
				t.Errorf("fields not typed: %v", rec)
			}
			if f := rec["fix"].(string); !strings.HasSuffix(f, "…") || strings.ContainsRune(f, '\uFFFD') {
				t.Errorf("fix cut badly: %q", f)
			}
		case "kubernetes":
			theirs++
		}
	}
	if ours != n || theirs != n {
		t.Errorf("%d records of nsguard and %d of CoreDNS, want %d each", ours, theirs, n)
	}
}
