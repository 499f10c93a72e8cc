// Command kube-apiserver is the upstream kube-apiserver, built from the module
// proxy so the e2e suite needs no downloads.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // upstream registers the JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // upstream registers client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // upstream registers the version metric
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
