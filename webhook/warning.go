package webhook

import (
	"strings"
	"unicode/utf8"

	"github.com/nsguard/nsguard/audit"
)

// maxWarningRunes bounds a warning. The API server passes a webhook's warnings on whole
// until a response's warnings pass 4,096 runes; then it cuts each to 256 (its warning
// recorder, k8s.io/apiserver/pkg/endpoints/filters/warning.go). At 256, kubectl prints
// nsguard's whole, whatever else warns.
const maxWarningRunes = 256

// text is a warning: what is wrong, in audit's words, and the fixes, best first.
type text struct {
	message string
	fixes   []string
}

// String is the whole warning.
func (t text) String() string { return t.with(len(t.fixes)) }

func (t text) with(fixes int) string {
	s := "nsguard: " + t.message
	if fixes > 0 {
		s += "; fix: " + strings.Join(t.fixes[:fixes], ", or ")
	}
	return s
}

// Short is the warning in at most maxWarningRunes: whole if it fits, else with fewer fixes,
// else cut at a space and marked; only names near their 63-character limit need that.
func (t text) Short() string {
	for n := len(t.fixes); n >= 0; n-- {
		if s := t.with(n); utf8.RuneCountInString(s) <= maxWarningRunes {
			return s
		}
	}
	r := []rune(t.with(0))[:maxWarningRunes-1]
	if i := strings.LastIndexByte(string(r), ' '); i > maxWarningRunes/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

// createText is the warning for a finding a CREATE brings: audit's message, and the fix
// for the person making the object; r is the cluster after the change.
func (p Policy) createText(f audit.Finding, ch Change, r audit.Names) text {
	t := text{message: f.Message}
	if f.Check != audit.CheckNamespaceCapture {
		// "rename namespace svc", "point a/b at <service>.c.svc.cluster.local (...)":
		// the change to make, without what clients can do meanwhile.
		fix, _, _ := strings.Cut(f.Fix, "; ")
		t.fixes = []string{fix}
		return t
	}
	n := f.Objects[0].Name // the namespace
	if ch.Kind == "Service" {
		t.fixes = []string{"use " + n + "." + ch.Namespace, "rename or delete namespace " + n}
		return t
	}
	t.fixes = []string{"rename namespace " + n}
	if h := p.home(r, n); h != "" {
		t.fixes = append(t.fixes, "use "+n+"."+h)
	}
	return t
}

// deleteText is the warning for the DELETE of Service ch.Namespace/ch.Name, whose short name
// a namespace captures; r is the cluster after the change.
func (p Policy) deleteText(ch Change, r audit.Names) text {
	n, ns := ch.Name, ch.Namespace
	t := text{message: "once Service " + ns + "/" + n + " is deleted, clients in " + ns + ` that type "` + n + `" get namespace ` + n}
	if h := p.home(r, n); h != "" {
		t.fixes = []string{"clients in " + ns + " use " + n + "." + h, "rename or delete namespace " + n}
	} else {
		t.fixes = []string{"rename or delete namespace " + n, "keep this Service while clients type " + n}
	}
	return t
}

// home is the namespace whose Service name clients should ask for, as audit's fix ranks
// them: a Service that is not an alias first; "" when no other namespace holds one.
func (p Policy) home(r audit.Names, name string) string {
	services, aliases := audit.Homes(r, name, p.Zone)
	for _, h := range append(services, aliases...) {
		if h != name {
			return h
		}
	}
	return ""
}
