// Package audit finds the names that Kubernetes cluster DNS answers through something
// other than what a client meant, from manifests or a live cluster. It reads names with
// nsguard.Classify, the project's one model of cluster DNS names.
//
// Checks (Finding.Check) and their severities:
//
//	namespace-captures-service  namespace N and Service N in another namespace D: clients
//	                            outside D typing N get namespace N. error when kube-dns
//	                            answers with ExternalName records from N, else warning.
//	endpoint-shadows-service    Service b in C has an endpoint a and Service a exists in
//	                            namespace b: clients in C typing a.b get the endpoint. error
//	                            (warning when only a pod name, answered with endpoint_pod_names).
//	alias-through-namespace     an ExternalName Service whose target, or a target along its
//	                            chain of ExternalName Services, is a namespace apex. error.
//	alias-dangling              an ExternalName target in the cluster zone that no Service
//	                            answers. warning.
//	alias-loop                  ExternalName Services whose targets form a loop. error.
//	reserved-namespace          a namespace named like a DNS schema label (svc, pod: error)
//	                            or a common top-level domain (com, io, org, ...: warning when
//	                            it holds a Service, which then answers <svc>.<tld>; else info).
//
// JSON output (nsguard audit --output json), schema version 1. Fields are never renamed
// within a version; new fields may be added.
//
//	{
//	  "version": 1,
//	  "zone": "cluster.local",
//	  "summary": {"error": 1, "warning": 0, "info": 0},
//	  "findings": [{
//	    "check":    "namespace-captures-service",
//	    "severity": "error" | "warning" | "info",
//	    "message":  "...",
//	    "objects":  [{"kind": "Namespace", "namespace": "" (omitted), "name": "my-app",
//	                  "source": "incident.yaml: document 1" | "live"}],
//	    "clients":  {"scope": "all" | "all-except" | "only", "namespaces": ["new-namespace-2"]},
//	    "name":     "my-app.svc.cluster.local." (the name that answers wrongly; may be omitted),
//	    "coredns":  {"rcode": "NOERROR" | "NXDOMAIN" | "UPSTREAM", "records": ["CNAME x."], "note": "..."},
//	    "kubeDNS":  {same as coredns},
//	    "fix":      "..."
//	  }]
//	}
//
// NOERROR without records is NODATA. UPSTREAM is a name outside the cluster zone.
// nsguard explain --output json prints an Explanation as JSON.
package audit
