package resolvers

import (
	"context"

	"github.com/miekg/dns"
)

// Query sends one question over UDP straight to server ("ip:port"), with no
// search list, to see the raw answer a server gives.
func Query(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	return exchange(ctx, "udp", server, name, qtype)
}

// QueryTCP is Query over TCP.
func QueryTCP(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	return exchange(ctx, "tcp", server, name, qtype)
}

func exchange(ctx context.Context, network, server, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network}
	r, _, err := c.ExchangeContext(ctx, m, server)
	return r, err
}
