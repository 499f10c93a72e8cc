// Command golookup resolves a name with Go's own (pure Go) resolver, the one
// most Go services in a pod use, and prints each distinct address on its own
// line (exit 0) or "ERROR <text>" (exit 2), like the C lookup program.
// Run it with GODEBUG=netdns=go as well, so no path can fall back to cgo.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: golookup NAME")
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &net.Resolver{PreferGo: true}
	// "ip" asks for A and AAAA, like getaddrinfo with AF_UNSPEC.
	ips, err := r.LookupIP(ctx, "ip", os.Args[1])
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		os.Exit(2)
	}
	seen := map[string]bool{}
	for _, ip := range ips {
		if s := ip.String(); !seen[s] {
			seen[s] = true
			fmt.Println(s)
		}
	}
}
