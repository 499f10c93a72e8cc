package nsguard

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nsguard/nsguard/audit"
)

// TestFindingBookAcrossReload: an instance started by a reload takes the book over at its
// first look, says only what changed since the old instance's last, and the old one, still
// running until CoreDNS stops it, writes nothing more.
func TestFindingBookAcrossReload(t *testing.T) {
	servers := []string{"dns://:1053-book"}
	capture := audit.Finding{Check: audit.CheckNamespaceCapture, Severity: audit.Warning, Objects: []audit.Object{{Kind: "Namespace", Name: "my-app"}}}
	reserved := audit.Finding{Check: audit.CheckReserved, Severity: audit.Info, Objects: []audit.Object{{Kind: "Namespace", Name: "com"}}}
	myApp, com := namespaceOwner("my-app", "cluster.local"), namespaceOwner("com", "cluster.local")
	gauge := func(check string, sev audit.Severity) float64 {
		return testutil.ToFloat64(findings.WithLabelValues(servers[0], check, string(sev)))
	}

	var lines []string
	report := func(f audit.Finding, gone bool) {
		s := "appears " + f.Check + " " + f.Objects[0].Name
		if gone {
			s = "gone " + f.Check + " " + f.Objects[0].Name
		}
		lines = append(lines, s)
	}
	old := newLiveFindings(nil, []string{"cluster.local."}, nil, nil, servers)
	steps := []struct {
		name  string
		l     func() *liveFindings
		now   map[string][]audit.Finding
		lines []string
		gauge float64 // of the capture
	}{
		{"first look", func() *liveFindings { return old }, map[string][]audit.Finding{myApp: {capture}, com: nil}, []string{"appears namespace-captures-service my-app"}, 1},
		{"unchanged", func() *liveFindings { return old }, map[string][]audit.Finding{myApp: {capture}}, nil, 1},
	}
	var reloaded *liveFindings
	steps = append(steps, []struct {
		name  string
		l     func() *liveFindings
		now   map[string][]audit.Finding
		lines []string
		gauge float64
	}{
		// The reload: the new instance's first look holds the capture still, and namespace com
		// was made meanwhile.
		{"new instance's first look", func() *liveFindings {
			reloaded = newLiveFindings(nil, []string{"cluster.local"}, nil, nil, servers)
			return reloaded
		}, map[string][]audit.Finding{myApp: {capture}, com: {reserved}}, []string{"appears reserved-namespace com"}, 1},
		{"the old instance, not stopped yet", func() *liveFindings { return old }, map[string][]audit.Finding{myApp: nil}, nil, 1},
		{"namespace my-app deleted", func() *liveFindings { return reloaded }, map[string][]audit.Finding{myApp: nil}, []string{"gone namespace-captures-service my-app"}, 0},
	}...)
	for _, st := range steps {
		lines = nil
		l := st.l()
		l.book.apply(l, st.now, report)
		if len(lines) != len(st.lines) || len(lines) > 0 && lines[0] != st.lines[0] {
			t.Errorf("%s: logged %q, want %q", st.name, lines, st.lines)
		}
		if g := gauge(audit.CheckNamespaceCapture, audit.Warning); g != st.gauge {
			t.Errorf("%s: gauge %v, want %v", st.name, g, st.gauge)
		}
	}
	if g := gauge(audit.CheckReserved, audit.Info); g != 1 {
		t.Errorf("reserved-namespace info gauge %v, want 1", g)
	}

	// A look after a stop and before the next instance's first: that one finds the book as
	// it was left, whatever changed meanwhile.
	reloaded.book.release(reloaded)
	third := newLiveFindings(nil, []string{"cluster.local"}, nil, nil, servers)
	lines = nil
	third.book.apply(third, map[string][]audit.Finding{}, report)
	if len(lines) != 1 || lines[0] != "gone reserved-namespace com" {
		t.Errorf("third instance logged %q, want namespace com gone", lines)
	}
}

// An allowed namespace answers its bare name on purpose: its capture is no finding, its
// reserved name still is.
func TestLiveFindingsAllowNamespace(t *testing.T) {
	l := newLiveFindings(nil, []string{"cluster.local"}, map[string]struct{}{"com": {}}, nil, []string{"dns://:1053-allow"})
	fs := l.unlessAllowed("com", []audit.Finding{{Check: audit.CheckNamespaceCapture}, {Check: audit.CheckReserved}})
	if len(fs) != 1 || fs[0].Check != audit.CheckReserved {
		t.Errorf("allowed namespace com keeps %+v", fs)
	}
	if fs := l.unlessAllowed("my-app", []audit.Finding{{Check: audit.CheckNamespaceCapture}}); len(fs) != 1 {
		t.Errorf("namespace my-app, not allowed, keeps %+v", fs)
	}
}
