package nsguard

import (
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
)

// memoSlots is how many refused questions mode refuse remembers: a fixed table, so its
// memory is bounded (32 KB, and about 1 MB when every slot holds an answer) whatever the
// clients ask. 400 questions fill a tenth of the slots that others also want.
const memoSlots = 4096

// refusalMemo remembers, for a namespace apex question that mode refuse refused, what the
// refusal was made of, so that the next client asking it within the answer's TTL is refused
// without the plugins after nsguard answering it again: during an incident nearly every
// refused question is a repeat, and a refusal then costs less than the answer it replaces.
//
// It keeps at most negativeTTL seconds, the TTL of the refusal itself, and never longer than
// the answer's own TTL said: what cache would still serve. Each slot holds one question;
// two questions that share a slot take it in turn. Reads take no lock.
type refusalMemo struct {
	seed  maphash.Seed
	clock func() time.Duration // monotonic, since the memo was made
	slots [memoSlots]atomic.Pointer[memoEntry]
}

// memoEntry is one refused question: its key, until when it holds, and the answer it was
// refused on, cut to what a refusal and its log line read (flags, SOA, records).
type memoEntry struct {
	key     string
	expires time.Duration
	res     *dns.Msg
}

func newRefusalMemo() *refusalMemo {
	start := time.Now()
	return &refusalMemo{seed: maphash.MakeSeed(), clock: func() time.Duration { return time.Since(start) }}
}

// rememberedAnswer reports whether res is one the memo made: those carry no QR bit, where
// every answer a plugin writes does, so a refusal made on one is not remembered anew and
// the memo holds no answer past its first refusal's TTLs.
func rememberedAnswer(res *dns.Msg) bool { return !res.Response }

// memoKey appends the question's name in lower case (resolvers randomise case) and type.
func memoKey(buf []byte, q dns.Question) []byte {
	buf = clusterdns.AppendLower(buf, q.Name)
	return append(buf, byte(q.Qtype>>8), byte(q.Qtype))
}

// get returns the answer q was last refused on, if it still holds.
func (m *refusalMemo) get(q dns.Question) *dns.Msg {
	var buf [260]byte // a name is at most 255 octets
	key := memoKey(buf[:0], q)
	e := m.slots[maphash.Bytes(m.seed, key)%memoSlots].Load()
	if e == nil || e.key != string(key) || m.clock() >= e.expires {
		return nil
	}
	return e.res
}

// put remembers res, the answer q was refused on, for as long as its TTLs and the refusal's
// allow. An answer with an OPT record is not kept: the OPT of a refusal follows the query's
// when the upstream sent none, and another client's query may differ.
func (m *refusalMemo) put(q dns.Question, res *dns.Msg) {
	if res.IsEdns0() != nil {
		return
	}
	ttl := uint32(negativeTTL)
	kept := &dns.Msg{} // no QR bit: rememberedAnswer
	kept.Authoritative, kept.RecursionAvailable = res.Authoritative, res.RecursionAvailable
	kept.Answer = res.Answer // only read: for the log line
	for _, rr := range res.Answer {
		ttl = min(ttl, rr.Header().Ttl)
	}
	for _, rr := range res.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			kept.Ns = []dns.RR{soa}
			ttl = min(ttl, soa.Hdr.Ttl)
			break
		}
	}
	if ttl == 0 {
		return
	}
	var buf [260]byte
	key := memoKey(buf[:0], q)
	m.slots[maphash.Bytes(m.seed, key)%memoSlots].Store(&memoEntry{
		key: string(key), expires: m.clock() + time.Duration(ttl)*time.Second, res: kept})
}
