package main

import (
	"fmt"
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
)

// nsguard runs just before cache: after autopath and acl, so it sees each search candidate
// autopath tries, and before cache, so a cached answer still passes its decision for the
// client that asked, as does what kubernetes, file and forward answer.
const (
	directive = "nsguard"
	anchor    = "cache"
)

// setDirectives puts nsguard into CoreDNS's plugin order.
func setDirectives() error {
	d, err := insertBefore(dnsserver.Directives, directive, anchor)
	if err != nil {
		return err
	}
	return dnsserver.SetDirectives(d)
}

// insertBefore returns a copy of directives with name just before anchor. A missing anchor
// is an error: placed anywhere else nsguard would miss answers, or decide once for everyone.
func insertBefore(directives []string, name, anchor string) ([]string, error) {
	if slices.Contains(directives, name) {
		return nil, fmt.Errorf("directive %q is already in the plugin order", name)
	}
	i := slices.Index(directives, anchor)
	if i < 0 {
		return nil, fmt.Errorf("cannot place directive %q: anchor %q is not in the plugin order", name, anchor)
	}
	return slices.Insert(slices.Clone(directives), i, name), nil
}
