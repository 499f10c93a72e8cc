package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
)

// source is where cluster state comes from, shared by both commands.
type source struct {
	files      []string
	kubeconfig string
	context    string
	zone       string
}

func (s *source) register(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&s.files, "filename", "f", nil, "manifest file, directory (recursive) or - for stdin; repeatable. Without -f, the live cluster is read")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&s.context, "context", "", "kubeconfig context (default: the current one)")
	fs.StringVar(&s.zone, "zone", "cluster.local", "cluster DNS zone")
}

func (s *source) check() error {
	if len(s.files) > 0 && (s.kubeconfig != "" || s.context != "") {
		return usagef("-f reads manifests; it cannot be combined with --kubeconfig or --context")
	}
	if err := clusterdns.CheckName(s.zone); err != nil {
		return usagef("--zone %q: %v", s.zone, err)
	}
	return nil
}

func (s *source) load(stdin io.Reader) (*model.Cluster, error) {
	if len(s.files) > 0 {
		return model.LoadFiles(s.files, stdin)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = s.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: s.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return model.LoadLive(ctx, cs)
}

// checkNamespace is -n as the commands take it: a namespace name, in lower case as
// Kubernetes writes them; "" stays "" (no namespace given).
func checkNamespace(ns string) (string, error) {
	if ns != "" && !clusterdns.IsDNSLabel(ns) {
		return "", usagef("--namespace %q: not a namespace name (letters, digits and '-', at most 63)", ns)
	}
	return strings.ToLower(ns), nil
}

// newCommand is a subcommand whose RunE returns its exit status; help goes to stdout.
func newCommand(use, synopsis string, code *int, run func(c *cobra.Command, args []string) (int, error)) *cobra.Command {
	return &cobra.Command{
		Use:  use,
		Long: synopsis,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			n, err := run(c, args)
			*code = n
			return err
		},
	}
}
