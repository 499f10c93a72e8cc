package findings

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterview"
)

// TestBookAcrossReload: a loop started by a reload takes the book over: its first look says
// only what changed since the old loop's last, and the old one, still running until CoreDNS
// stops it, writes nothing more.
func TestBookAcrossReload(t *testing.T) {
	capture := audit.Finding{Check: audit.CheckNamespaceCapture, Severity: audit.Warning, Objects: []audit.Object{{Kind: "Namespace", Name: "my-app"}}}
	reserved := audit.Finding{Check: audit.CheckReserved, Severity: audit.Info, Objects: []audit.Object{{Kind: "Namespace", Name: "com"}}}
	myApp, com := namespaceOwner("my-app", "cluster.local"), namespaceOwner("com", "cluster.local")
	changes := 0
	book := NewBook(func() { changes++ })
	gauge := func(check string, sev audit.Severity) int { return book.Counts()[check][sev] }

	var lines []string
	report := func(f audit.Finding, gone bool) {
		s := "appears " + f.Check + " " + f.Objects[0].Name
		if gone {
			s = "gone " + f.Check + " " + f.Objects[0].Name
		}
		lines = append(lines, s)
	}
	cfg := Config{Zones: []string{"cluster.local."}}
	old := New(nil, book, cfg)
	book.take(old)
	var reloaded *Live
	steps := []struct {
		name  string
		l     func() *Live
		now   map[string][]audit.Finding
		lines []string
		gauge int // of the capture
	}{
		{"first look", func() *Live { return old }, map[string][]audit.Finding{myApp: {capture}, com: nil}, []string{"appears namespace-captures-service my-app"}, 1},
		{"unchanged", func() *Live { return old }, map[string][]audit.Finding{myApp: {capture}}, nil, 1},
		// The reload: the new loop's first look holds the capture still, and namespace com
		// was made meanwhile.
		{"new loop's first look", func() *Live {
			reloaded = New(nil, book, cfg)
			book.take(reloaded)
			return reloaded
		}, map[string][]audit.Finding{myApp: {capture}, com: {reserved}}, []string{"appears reserved-namespace com"}, 1},
		{"the old loop, not stopped yet", func() *Live { return old }, map[string][]audit.Finding{myApp: nil}, nil, 1},
		{"namespace my-app deleted", func() *Live { return reloaded }, map[string][]audit.Finding{myApp: nil}, []string{"gone namespace-captures-service my-app"}, 0},
	}
	for _, st := range steps {
		lines = nil
		l := st.l()
		book.apply(l, st.now, report)
		if len(lines) != len(st.lines) || len(lines) > 0 && lines[0] != st.lines[0] {
			t.Errorf("%s: logged %q, want %q", st.name, lines, st.lines)
		}
		if g := gauge(audit.CheckNamespaceCapture, audit.Warning); g != st.gauge {
			t.Errorf("%s: %d captures held, want %d", st.name, g, st.gauge)
		}
	}
	if g := gauge(audit.CheckReserved, audit.Info); g != 1 {
		t.Errorf("%d reserved-namespace findings held, want 1", g)
	}
	if changes != 3 {
		t.Errorf("told of %d changes, want 3", changes)
	}

	// A loop that takes the book after the last one stopped finds it as it was left, whatever
	// changed meanwhile.
	third := New(nil, book, cfg)
	book.take(third)
	lines = nil
	book.apply(third, map[string][]audit.Finding{}, report)
	if len(lines) != 1 || lines[0] != "gone reserved-namespace com" {
		t.Errorf("third loop logged %q, want namespace com gone", lines)
	}
}

// An allowed namespace answers its bare name on purpose: its capture is no finding, its
// reserved name still is.
func TestLiveAllowNamespace(t *testing.T) {
	l := New(nil, NewBook(nil), Config{Zones: []string{"cluster.local"}, Allowed: map[string]struct{}{"com": {}}})
	fs := l.unlessAllowed("com", []audit.Finding{{Check: audit.CheckNamespaceCapture}, {Check: audit.CheckReserved}})
	if len(fs) != 1 || fs[0].Check != audit.CheckReserved {
		t.Errorf("allowed namespace com keeps %+v", fs)
	}
	if fs := l.unlessAllowed("my-app", []audit.Finding{{Check: audit.CheckNamespaceCapture}}); len(fs) != 1 {
		t.Errorf("namespace my-app, not allowed, keeps %+v", fs)
	}
}

// A namespace that reaches the view after its own Services (two informers give no order
// between kinds) is found as soon as it is there, as one that came first.
func TestFindingNamespaceAfterItsServices(t *testing.T) {
	cs := fake.NewClientset()
	v := clusterview.New(clusterview.Config{Client: cs})
	run := v.Start(nil)
	t.Cleanup(run.Stop)
	var mu sync.Mutex
	var found []string
	l := New(v, NewBook(nil), Config{Zones: []string{"cluster.local."}, Event: func(f audit.Finding) {
		mu.Lock()
		defer mu.Unlock()
		found = append(found, f.Check+" "+f.Objects[0].String())
	}})
	l.Start()
	t.Cleanup(l.Stop)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "aliases", Name: "db"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}}
	if _, err := cs.CoreV1().Services("aliases").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * Every) // the Service is in the index, its namespace not yet in the view
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "aliases"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := audit.CheckApexAnswers + " Namespace aliases"
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		got := slices.Clone(found)
		mu.Unlock()
		if slices.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace aliases, made after its Service, not found within 5s; found %q", strings.Join(got, ", "))
		}
	}
}
