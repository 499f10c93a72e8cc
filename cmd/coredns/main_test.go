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

// runAsCoreDNS makes the test binary run main instead of the tests, so that a test can start
// CoreDNS as built here in a process of its own.
const runAsCoreDNS = "NSGUARD_TEST_RUN_COREDNS"

func TestMain(m *testing.M) {
	if os.Getenv(runAsCoreDNS) == "1" {
		main()
		return
	}
	clog.Discard()
	if err := setDirectives(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
