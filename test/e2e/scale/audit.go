package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// The API server's audit log records every LIST and WATCH at Metadata level (who, what, the
// request's URI with its resourceVersion), nothing else: it is how the watches are counted
// by user agent, and how a relist is told from a watch that resumed.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["list", "watch"]
- level: None
`

// EtcdQuota is etcd's --quota-backend-bytes for the full size: each Pod is written twice
// (created, then its status) at about 9 KB, and etcd's default 2 GiB is too tight for that.
const EtcdQuota = 8 << 30

// ControlPlaneOptions are what StartControlPlane adds: etcd's quota, and the audit log.
func ControlPlaneOptions() cluster.Options {
	return cluster.Options{
		EtcdArgs:     []string{fmt.Sprintf("--quota-backend-bytes=%d", int64(EtcdQuota))},
		AuditPolicy:  auditPolicy,
		ReadyTimeout: 10 * time.Minute,
	}
}

// StartControlPlane starts a control plane in dir for the scale cluster: etcd with EtcdQuota,
// and the API server with its audit log, whose path it returns. Stop it as any other.
func StartControlPlane(ctx context.Context, binDir, dir string) (*cluster.ControlPlane, string, error) {
	cp, err := cluster.StartWithOptions(ctx, binDir, dir, ControlPlaneOptions())
	if err != nil {
		return nil, "", err
	}
	return cp, cp.AuditLog(), nil
}

// Request is one LIST or WATCH the API server served, from its audit log.
type Request struct {
	ID        string
	Agent     string // the user agent's product: "coredns", "coredns-nsguard", ...
	UserAgent string // whole
	User      string // the authenticated user's name
	Verb      string // list or watch
	Resource  string // pods, services, endpointslices, namespaces, ...; none for a non-resource URL
	URI       string
	Started   bool      // a ResponseStarted stage was seen (watches)
	Completed bool      // a ResponseComplete stage was seen
	Code      int       // the response code, when completed
	Start     time.Time // the first stage logged
	End       time.Time // ResponseComplete's
}

// SendsInitialEvents reports a streaming list: a WATCH that starts with the whole state.
func (r Request) SendsInitialEvents() bool { return r.query().Get("sendInitialEvents") == "true" }

// ResourceVersion is the request's resourceVersion parameter.
func (r Request) ResourceVersion() string { return r.query().Get("resourceVersion") }

// FieldSelector is the request's fieldSelector parameter.
func (r Request) FieldSelector() string { return r.query().Get("fieldSelector") }

// FullState reports whether the request starts a transfer of the whole collection: a LIST
// (its first page), or a WATCH with sendInitialEvents. After an API server restart, it is
// what a relist looks like; a watch that resumes from its resource version is not.
func (r Request) FullState() bool {
	return (r.Verb == "list" && r.query().Get("continue") == "" && !r.Probe()) || r.SendsInitialEvents()
}

// Probe reports a LIST of a few objects (limit below 100), such as a liveness check of the
// API server: not a relist, which lists everything or pages of 500.
func (r Request) Probe() bool {
	if r.Verb != "list" {
		return false
	}
	n, err := strconv.Atoi(r.query().Get("limit"))
	return err == nil && n > 0 && n < 100
}

func (r Request) query() url.Values {
	u, err := url.Parse(r.URI)
	if err != nil {
		return nil
	}
	return u.Query()
}

// Agent is the product of a user agent: what comes before its first "/" or space.
func Agent(ua string) string {
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		return ua[:i]
	}
	return ua
}

// AuditLog reads the API server's audit log by byte offsets, so that each phase of a run
// reads what happened in it.
type AuditLog struct{ Path string }

// Offset is the log's size now: where what happens next begins.
func (a AuditLog) Offset() (int64, error) {
	st, err := os.Stat(a.Path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Since returns the requests logged from offset on, in the order they were first logged,
// leaving out this package's own and the API server's. Which requests the log holds is its
// policy's choice.
func (a AuditLog) Since(offset int64) ([]Request, error) {
	f, err := os.Open(a.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	byID := map[string]*Request{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line cut by a concurrent write
		}
		agent := Agent(e.UserAgent)
		if agent == UserAgent || agent == "kube-apiserver" {
			continue
		}
		id := string(e.AuditID)
		r, ok := byID[id]
		if !ok {
			r = &Request{ID: id, Agent: agent, UserAgent: e.UserAgent, User: e.User.Username, Verb: e.Verb, URI: e.RequestURI, Start: e.StageTimestamp.Time}
			if e.ObjectRef != nil {
				r.Resource = e.ObjectRef.Resource
			}
			byID[id] = r
			order = append(order, id)
		}
		switch e.Stage {
		case auditv1.StageResponseStarted:
			r.Started = true
		case auditv1.StageResponseComplete, auditv1.StagePanic:
			r.Completed, r.End = true, e.StageTimestamp.Time
			if e.ResponseStatus != nil {
				r.Code = int(e.ResponseStatus.Code)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]Request, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out, nil
}

// Key is a user agent's product and a resource, "coredns-nsguard pods".
type Key struct{ Agent, Resource string }

func (k Key) String() string { return k.Agent + " " + k.Resource }

// Counts are numbers by agent and resource.
type Counts map[Key]int

// String lists the counts as "agent: resource n, ...; agent: ...", sorted.
func (c Counts) String() string {
	if len(c) == 0 {
		return "none"
	}
	by := map[string][]string{}
	for k, n := range c {
		by[k.Agent] = append(by[k.Agent], fmt.Sprintf("%s %d", k.Resource, n))
	}
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(by)) {
		slices.Sort(by[a])
		parts = append(parts, a+": "+strings.Join(by[a], ", "))
	}
	return strings.Join(parts, "; ")
}

// Of is the counts of one agent.
func (c Counts) Of(agent string) Counts {
	out := Counts{}
	for k, n := range c {
		if k.Agent == agent {
			out[k] = n
		}
	}
	return out
}

// Total adds the counts up.
func (c Counts) Total() int {
	var t int
	for _, n := range c {
		t += n
	}
	return t
}

// OpenWatches counts the watches among reqs that started and have not ended.
func OpenWatches(reqs []Request) Counts {
	c := Counts{}
	for _, r := range reqs {
		if r.Verb == "watch" && r.Started && !r.Completed {
			c[Key{r.Agent, r.Resource}]++
		}
	}
	return c
}

// Probes counts the LISTs of a few objects among reqs.
func Probes(reqs []Request) Counts {
	c := Counts{}
	for _, r := range reqs {
		if r.Probe() {
			c[Key{r.Agent, r.Resource}]++
		}
	}
	return c
}

// FullStates counts the LISTs and streaming lists among reqs: initial syncs, or relists.
func FullStates(reqs []Request) Counts {
	c := Counts{}
	for _, r := range reqs {
		if r.FullState() {
			c[Key{r.Agent, r.Resource}]++
		}
	}
	return c
}
