// Package webhook is nsguard's validating admission webhook: it tells the person who
// creates a Namespace or a Service, or deletes a Service, at that moment, when the change
// makes a short name answer through a namespace. It runs package audit's checks
// (NamespaceFindings, AliasFinding) on the cluster as the change would leave it, and
// answers with one warning a finding, in audit's words; with Policy.Deny it refuses the
// CREATEs it warns of.
//
// What it keeps: the names of every Namespace and Service, and whether a namespace is being
// deleted, from metadata-only informers (Index), each object stripped to its name,
// namespace and deletion time as it arrives. A review is answered from them alone; the API
// server is never called on a review. No Service's type or target is known but the one under
// admission's: the checks then read every other Service as a Service that answers.
//
//	CREATE Namespace N      namespace-captures-service (a Service N elsewhere),
//	                        reserved-namespace (svc, pod, com, io, ...)
//	CREATE Service D/S      namespace-captures-service (namespace S exists, S != D),
//	                        reserved-namespace (D is svc, pod, com, ...),
//	                        alias-through-namespace (ExternalName S.svc.<zone> or the like)
//	DELETE Service D/S      namespace S captures S: D's clients, who got D/S first, now
//	                        get the namespace (not when D itself is being deleted)
//
// The command is nsguard webhook (cmd/nsguard), which wires its flags to Config; the
// manifests are deploy/webhook, the runbook docs/webhook.md.
package webhook
