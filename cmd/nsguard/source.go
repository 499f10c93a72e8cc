package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterdns"
)

var errHelp = errors.New("help shown")

// files is a repeatable -f.
type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

// source is where cluster state comes from, shared by both commands.
type source struct {
	files      files
	kubeconfig string
	context    string
	zone       string
}

func (s *source) register(fs *flag.FlagSet) {
	fs.Var(&s.files, "f", "manifest file, directory (recursive) or - for stdin; repeatable. Without -f, the live cluster is read")
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

func (s *source) load(stdin io.Reader) (*clusterdns.Cluster, error) {
	if len(s.files) > 0 {
		return audit.LoadFiles(s.files, stdin)
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
	return audit.LoadLive(ctx, cs)
}

// parse parses flags and positional arguments in any order, as kubectl users expect.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}
