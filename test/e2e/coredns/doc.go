// Package coredns builds the CoreDNS of cmd/coredns and runs it as a real process on port 53
// of a loopback address, where stub resolvers can reach it: with a kubeconfig (Start), or as
// in a pod, with a service account, in-cluster configuration and its own resolv.conf
// (StartInPod).
package coredns
