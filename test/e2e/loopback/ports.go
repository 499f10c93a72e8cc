// Package loopback picks free ports on 127.0.0.1 for the processes the tests start.
package loopback

import "net"

// FreePorts returns n distinct free TCP ports on 127.0.0.1. The kernel draws a free port at
// random and hands it out again once released, so each is held until all n are chosen.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
