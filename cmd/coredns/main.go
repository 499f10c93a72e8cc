// Command coredns is CoreDNS v1.15.0 with every standard plugin plus nsguard.
package main

import (
	"fmt"
	"os"

	_ "github.com/coredns/coredns/core/plugin" // every standard plugin
	"github.com/coredns/coredns/coremain"

	_ "github.com/nsguard/nsguard"
)

func main() {
	if err := setDirectives(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	coremain.Run()
}
