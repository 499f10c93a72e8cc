package webhook

import (
	"slices"
	"strings"

	"github.com/nsguard/nsguard/audit"
)

// Operation is what an admission request does.
type Operation string

const (
	Create Operation = "CREATE"
	Delete Operation = "DELETE"
)

// Change is an admission request as the decision reads it: which object comes or goes.
type Change struct {
	Operation    Operation
	Kind         string // "Namespace" or "Service"
	Namespace    string // a Service's
	Name         string
	ExternalName string // an ExternalName Service's target; "" for any other Service
}

func (c Change) object() audit.Object {
	return audit.Object{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
}

// View is the cluster as the decision reads it: audit's names, and which namespaces are
// being deleted. Index is one.
type View interface {
	audit.Names
	Terminating(namespace string) bool
}

// Policy is how the webhook answers.
type Policy struct {
	Zone string // the cluster zone, e.g. cluster.local
	// Deny refuses a CREATE that gets a warning, with the warning's words.
	Deny bool
	// Allow are namespaces meant to answer their bare names, as nsguard's 'allow namespace':
	// their captures are no finding. A reserved name stays one.
	Allow map[string]bool
}

// Verdict is the answer to one change: a warning for each finding it brings, and whether
// it is refused.
type Verdict struct {
	Findings []audit.Finding
	Warnings []string // one a finding, at most maxWarningRunes each
	Deny     bool
	Message  string // why it is refused: every finding, whole

	texts []string // the warnings, whole
}

// warnedChecks are the checks whose findings a change can bring and the webhook tells:
// those that make a client's name answer through a namespace. namespace-apex-answers
// is left to audit: the blog's fix makes one, and telling it to the person applying the
// fix would teach them to ignore the webhook.
var warnedChecks = []string{audit.CheckNamespaceCapture, audit.CheckReserved, audit.CheckAliasNamespace}

// Decide runs audit's checks on the cluster as the change leaves it and tells what the
// change brings:
//   - CREATE of a Namespace or a Service: each finding, of a warned check, that names the new
//     object: a namespace that captures a Service's short name, or is named like a DNS
//     schema label or a top-level domain; a Service whose short name a namespace captures,
//     or made in such a namespace; an ExternalName Service that leads to a namespace apex.
//   - DELETE of a Service: the capture of its short name by a namespace, which its own
//     namespace's clients escaped while it existed, unless that namespace is going too.
//
// It reads v only: nothing is asked of the API server.
func (p Policy) Decide(v View, ch Change) Verdict {
	var out Verdict
	obj := ch.object()
	switch {
	case ch.Operation == Create && ch.Kind == "Namespace":
		if _, exists := v.Namespace(ch.Name); exists {
			return out // the API server refuses it: it exists
		}
		after := overlay{Names: v, namespace: ch.Name}
		for _, f := range p.findings(after, ch.Name, obj) {
			out.add(f, p.createText(f, ch, after))
		}
	case ch.Operation == Create && ch.Kind == "Service":
		if _, exists := v.Service(ch.Namespace, ch.Name); exists {
			return out
		}
		ref := audit.Ref{Namespace: ch.Namespace, Name: ch.Name, Alias: ch.ExternalName != "", ExternalName: ch.ExternalName, Source: admissionSource}
		after := overlay{Names: v, add: &ref}
		touched := []string{ch.Name}
		if ch.Namespace != ch.Name {
			touched = append(touched, ch.Namespace)
		}
		for _, name := range touched {
			for _, f := range p.findings(after, name, obj) {
				out.add(f, p.createText(f, ch, after))
			}
		}
		if f, ok := audit.AliasFinding(after, ch.Namespace, ch.Name, p.Zone); ok && f.Check == audit.CheckAliasNamespace {
			out.add(f, p.createText(f, ch, after))
		}
	case ch.Operation == Delete && ch.Kind == "Service":
		if v.Terminating(ch.Namespace) || p.Allow[ch.Name] {
			return out // its clients go with it; or the namespace is meant to answer
		}
		ref := audit.Ref{Namespace: ch.Namespace, Name: ch.Name}
		after := overlay{Names: v, drop: &ref}
		for _, f := range audit.NamespaceFindings(v, ch.Name, p.Zone) {
			if f.Check == audit.CheckNamespaceCapture && names(f, obj) {
				out.add(f, p.deleteText(ch, after))
			}
		}
	}
	if p.Deny && ch.Operation == Create && len(out.Findings) > 0 {
		out.Deny, out.Message = true, strings.Join(out.texts, "\nand ")
	}
	return out
}

// findings are the findings of a warned check for namespace name that name obj.
func (p Policy) findings(r audit.Names, name string, obj audit.Object) []audit.Finding {
	var out []audit.Finding
	for _, f := range audit.NamespaceFindings(r, name, p.Zone) {
		if !slices.Contains(warnedChecks, f.Check) || !names(f, obj) {
			continue
		}
		if f.Check == audit.CheckNamespaceCapture && p.Allow[name] {
			continue
		}
		out = append(out, f)
	}
	return out
}

func (v *Verdict) add(f audit.Finding, t text) {
	v.Findings = append(v.Findings, f)
	v.texts = append(v.texts, t.String())
	v.Warnings = append(v.Warnings, t.Short())
}

// names reports whether obj is among a finding's objects.
func names(f audit.Finding, obj audit.Object) bool {
	return slices.ContainsFunc(f.Objects, func(o audit.Object) bool {
		return o.Kind == obj.Kind && o.Namespace == obj.Namespace && o.Name == obj.Name
	})
}
