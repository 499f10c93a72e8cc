// Command pause is the node's sandbox image and the resting process of its client images: it
// waits for SIGTERM or SIGINT and exits 0, as registry.k8s.io/pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
