// Command helmcheck renders deploy/helm/values-nsguard.yaml with a real helm against the
// official CoreDNS chart at the version the values name, and fails when the Corefile it gives
// differs from the chart's default Corefile by anything but the nsguard block. The values
// restate the chart's whole plugin list (the chart cannot add one plugin to a server block,
// coredns/helm#233), so a chart release that changes its defaults shows up here.
//
//	go run ./test/e2e/helmcheck -helm bin/helm -chart coredns-1.46.2.tgz
//
// The chart is a directory or a .tgz (helm pull coredns/coredns --version VERSION); make
// helm-check builds helm and runs this.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	helm := flag.String("helm", "helm", "the helm binary")
	chart := flag.String("chart", "", "the coredns chart: a directory or a .tgz")
	values := flag.String("values", "deploy/helm/values-nsguard.yaml", "the nsguard values")
	flag.Parse()
	if err := run(*helm, *chart, *values); err != nil {
		fmt.Fprintln(os.Stderr, "helmcheck:", err)
		os.Exit(1)
	}
}

func run(helm, chart, values string) error {
	if chart == "" {
		return errors.New("-chart is required: a directory or .tgz of the coredns chart (helm pull coredns/coredns --version VERSION)")
	}
	src, err := os.ReadFile(values)
	if err != nil {
		return err
	}
	want, err := namedVersion(src)
	if err != nil {
		return fmt.Errorf("%s: %w", values, err)
	}
	var meta struct{ Name, Version string }
	out, err := command(helm, "show", "chart", chart)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(out, &meta); err != nil {
		return fmt.Errorf("helm show chart: %w", err)
	}
	if meta.Name != "coredns" || meta.Version != want {
		return fmt.Errorf("the chart is %s %s; %s names coredns %s", meta.Name, meta.Version, values, want)
	}
	stock, err := corefile(helm, chart)
	if err != nil {
		return err
	}
	guarded, err := corefile(helm, chart, "-f", values)
	if err != nil {
		return err
	}
	block, err := OnlyNSGuard(stock, guarded)
	if err != nil {
		return fmt.Errorf("chart coredns %s with %s: %w", want, values, err)
	}
	fmt.Printf("helmcheck: chart coredns %s: %s adds only\n%s\n", want, values, block)
	return nil
}

// versionLine is how the values name their chart version: the --version of their helm command.
var versionLine = regexp.MustCompile(`(?m)^#.*\bhelm upgrade .*--version ([0-9][^\s]*)`)

// namedVersion is the chart version the values file names.
func namedVersion(values []byte) (string, error) {
	m := versionLine.FindSubmatch(values)
	if m == nil {
		return "", errors.New("names no chart version (a '# helm upgrade ... --version X' line)")
	}
	return string(m[1]), nil
}

// corefile renders the chart's ConfigMap with helm template and returns its Corefile.
func corefile(helm, chart string, args ...string) (string, error) {
	out, err := command(helm, append([]string{"template", "coredns", chart, "-n", "kube-system",
		"--show-only", "templates/configmap.yaml"}, args...)...)
	if err != nil {
		return "", err
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(out, &cm); err != nil {
		return "", fmt.Errorf("helm template: %w", err)
	}
	c, ok := cm.Data["Corefile"]
	if !ok {
		return "", fmt.Errorf("helm template gave a ConfigMap without a Corefile:\n%s", out)
	}
	return c, nil
}

func command(name string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return out, nil
}
