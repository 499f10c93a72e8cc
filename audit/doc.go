// Package audit holds the checks that find the names Kubernetes cluster DNS answers
// through something other than what a client meant. They read a cluster through Names;
// nsguard audit runs them on the offline model (package model, from manifests or a one-off
// read of a cluster, which also says what CoreDNS and kube-dns answer), and the plugin on
// its live view, from names alone. The package links no model, loader or CLI code.
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
//	namespace-apex-answers      with kube-dns, a namespace that holds ExternalName Services
//	                            answers its own name with them (the blog's fix makes one);
//	                            no Service of that name exists, so nobody is captured yet. info.
//
// JSON output (nsguard audit --output json), schema version 2. Fields are never renamed
// within a version; new fields may be added. Version 2 gave records their owners and
// added cnameOneOf, shuffled and additional.
//
//	{
//	  "version": 2,
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
//	    "coredns":  {"rcode": "NOERROR" | "NXDOMAIN" | "UPSTREAM",
//	                 "records": ["<owner> <type> <data>", ...] (an A question's answer section),
//	                 "cnameOneOf": ["<target>", ...] (kube-dns: one CNAME, to one of these, at random),
//	                 "shuffled": true (the records come in a random order),
//	                 "note": "..."},
//	    "kubeDNS":  {same as coredns},
//	    "fix":      "..."
//	  }]
//	}
//
// NOERROR without records is NODATA. UPSTREAM is a name outside the cluster zone. A datum
// in angle brackets, such as <cluster IP>, is not known from the objects read.
package audit
