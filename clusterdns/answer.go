package clusterdns

import "strings"

// Rcodes of an Answer. Upstream stands for a name outside the cluster zone: cluster DNS
// forwards it, so what comes back is not known from the cluster's state.
const (
	NoError  = "NOERROR"
	NXDomain = "NXDOMAIN"
	Upstream = "UPSTREAM"
)

// Question types the answer models know.
const (
	TypeA     = "A"
	TypeAAAA  = "AAAA"
	TypeCNAME = "CNAME"
	TypeSRV   = "SRV"
	TypeTXT   = "TXT"
)

// Record is one resource record of an answer, without TTL and class.
type Record struct {
	Owner string // fully qualified, in lower case
	Type  string
	Data  string // "10.96.0.20", "other-app-1.legacy-a.svc.cluster.local.", "10 50 0 x."
}

// String is the record as dig prints it, without TTL and class.
func (r Record) String() string { return r.Owner + " " + r.Type + " " + r.Data }

// MarshalText makes a record one JSON string.
func (r Record) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Answer is what cluster DNS answers to one question.
type Answer struct {
	Rcode   string   `json:"rcode"`
	Records []Record `json:"records,omitempty"` // the answer section
	// kube-dns keeps one CNAME of several: the answer holds a CNAME from the question to
	// one of these targets, picked at random, besides Records.
	CNAMEOneOf []string `json:"cnameOneOf,omitempty"`
	Shuffled   bool     `json:"shuffled,omitempty"`   // the records come in a random order
	Additional []Record `json:"additional,omitempty"` // SRV: the targets' addresses
	Note       string   `json:"note,omitempty"`
}

// HasRecords reports an answer that a stub resolver takes: NOERROR with records.
func (a Answer) HasRecords() bool {
	return a.Rcode == NoError && (len(a.Records) > 0 || len(a.CNAMEOneOf) > 0)
}

// NoData reports NOERROR without records.
func (a Answer) NoData() bool { return a.Rcode == NoError && !a.HasRecords() }

// String says the answer in a few words: the rcode, NODATA, or its records.
func (a Answer) String() string {
	switch {
	case a.Rcode == Upstream:
		return "upstream"
	case a.NoData():
		return "NODATA"
	case a.Rcode != NoError:
		return a.Rcode
	}
	var parts []string
	if len(a.CNAMEOneOf) > 0 {
		parts = append(parts, "one CNAME to "+strings.Join(a.CNAMEOneOf, " or "))
	}
	for _, r := range a.Records {
		parts = append(parts, r.Type+" "+r.Data)
	}
	s := strings.Join(parts, ", ")
	if a.Shuffled {
		s += ", in random order"
	}
	return s
}

// Addresses are the data of the answer's A and AAAA records.
func (a Answer) Addresses() []string {
	var out []string
	for _, r := range a.Records {
		if r.Type == TypeA || r.Type == TypeAAAA {
			out = append(out, r.Data)
		}
	}
	return out
}
