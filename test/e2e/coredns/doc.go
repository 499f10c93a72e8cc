// Package coredns builds the CoreDNS of cmd/coredns and runs it as a real process on a
// loopback address at port 53, where stub resolvers can reach it.
package coredns
