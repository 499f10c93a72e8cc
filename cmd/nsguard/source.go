package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
)

// source is where cluster state comes from, shared by audit and explain: manifests (-f),
// or the live cluster through kubectl's own flags (genericclioptions.ConfigFlags), so that
// the kubectl plugin takes --kubeconfig, --context, --cluster, --user, --as, --token,
// --request-timeout and the rest as kubectl does. -n is kubectl's flag, with the meaning
// each command gives it.
type source struct {
	files []string
	zone  string
	kube  *genericclioptions.ConfigFlags
	flags *pflag.FlagSet // the command's
}

// kubectlGroup marks the flags that come from kubectl, which help lists apart.
const kubectlGroup = "nsguard.kubectl"

func (s *source) register(fs *pflag.FlagSet, namespaceUsage string) {
	fs.StringArrayVarP(&s.files, "filename", "f", nil, "manifest file, directory (recursive) or - for stdin; repeatable. Without -f, the live cluster is read")
	fs.StringVar(&s.zone, "zone", "cluster.local", "cluster DNS zone")
	s.kube, s.flags = genericclioptions.NewConfigFlags(true), fs
	kube := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	s.kube.AddFlags(kube)
	kube.VisitAll(func(f *pflag.Flag) {
		if f.Name == "namespace" {
			f.Usage = namespaceUsage
		} else {
			f.Annotations = map[string][]string{kubectlGroup: nil}
		}
	})
	fs.AddFlagSet(kube)
}

// kubectlFlagSet is the kubectl flag among those set, or "".
func (s *source) kubectlFlagSet() string {
	set := ""
	s.flags.Visit(func(f *pflag.Flag) {
		if _, ok := f.Annotations[kubectlGroup]; ok && set == "" {
			set = f.Name
		}
	})
	return set
}

func (s *source) check() error {
	if f := s.kubectlFlagSet(); len(s.files) > 0 && f != "" {
		return usagef("-f reads manifests; it cannot be combined with --%s, which is for the live cluster", f)
	}
	if err := clusterdns.CheckName(s.zone); err != nil {
		return usagef("--zone %q: %v", s.zone, err)
	}
	// As clientcmd reads it, which says what is wrong but not with what.
	if t := *s.kube.Timeout; t != "" {
		if _, err := strconv.Atoi(t); err != nil {
			if d, err := time.ParseDuration(t); err != nil || d < 0 {
				return usagef("--request-timeout %q: want a duration such as 30s or 2m, or 0 for none", t)
			}
		}
	}
	return nil
}

// namespace is -n.
func (s *source) namespace() string { return *s.kube.Namespace }

// contextNamespace is the namespace of the kubeconfig's context, as kubectl takes it
// without -n ("default" when the context names none).
func (s *source) contextNamespace() (string, error) {
	ns, _, err := s.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	return ns, nil
}

func (s *source) load(stdin io.Reader) (*model.Cluster, error) {
	if len(s.files) > 0 {
		return model.LoadFiles(s.files, stdin)
	}
	cfg, err := s.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if !s.flags.Changed("request-timeout") {
		cfg.Timeout = 30 * time.Second
	}
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
