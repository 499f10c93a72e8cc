package main

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	clog "github.com/coredns/coredns/plugin/pkg/log"
)

// original is CoreDNS's own plugin order, before nsguard joins it.
var original = slices.Clone(dnsserver.Directives)

func TestMain(m *testing.M) {
	clog.Discard()
	if err := setDirectives(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
