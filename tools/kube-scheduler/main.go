// Command kube-scheduler is the upstream kube-scheduler, built from the module proxy for the
// e2e node.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // upstream registers the JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // upstream registers client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // upstream registers the version metric
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
