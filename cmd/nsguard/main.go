// Command nsguard finds the Kubernetes names that cluster DNS answers through a namespace,
// an endpoint or a broken alias, from manifests or a live cluster, and ranks the clients
// that nsguard's log lines show asking for them. Installed as kubectl-nsguard on the PATH
// it is the kubectl plugin: kubectl nsguard audit|explain|offenders.
//
//	nsguard audit     [-f PATH]... [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [-o table|json|github] [--fail-on SEVERITY]
//	nsguard explain   NAME -n NAMESPACE [-f PATH]... [--ndots N] [--search "D1 D2"] [--zone ZONE]
//	nsguard offenders [-f FILE]... [FILE]... [-n NAMESPACE] [-o table|json|github]
//	nsguard webhook   --tls-cert-file FILE --tls-private-key-file FILE [--kubeconfig FILE] [--deny]
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const usage = `nsguard finds names that Kubernetes cluster DNS answers through a namespace,
an endpoint or a broken alias.

Usage:
  nsguard audit     [flags]                 list every finding
  nsguard explain   NAME -n NAMESPACE [flags]
                                            show each search candidate and its answer
  nsguard offenders [flags] [FILE]...       rank the clients in nsguard's log lines
  nsguard webhook   [flags]                 warn at admission of the changes that set the trap

For audit and explain, cluster state comes from -f (files, directories, or - for
stdin; YAML or JSON, multi-document, List kinds, kubectl get -o yaml|json) or, without
-f, from the live cluster of the current kubeconfig context (only list calls).
offenders reads CoreDNS logs from files (-f or arguments) or stdin, such as
kubectl -n kube-system logs -l k8s-app=kube-dns --tail=-1 --prefix --timestamps
(with -l, kubectl prints only the last 10 lines of each Pod unless --tail=-1).

Flags read like kubectl's: -n/--namespace, -o/--output, -f/--filename, and for the
live cluster kubectl's own (--kubeconfig, --context, --cluster, --user, --as, --token,
--server, --request-timeout, ...). Installed as kubectl-nsguard on the PATH, this is the
kubectl plugin 'kubectl nsguard'.

Exit status: 0 nothing found, 1 findings (audit: at or above --fail-on; explain:
the winning answer is not what the name most likely meant; offenders: any row),
2 usage or input error.

Run 'nsguard audit -h', 'nsguard explain -h', 'nsguard offenders -h' or
'nsguard webhook -h' for the flags.
`

func main() {
	// audit and explain read inputs several times larger than what they keep: a lower GC
	// target than Go's default (100) keeps the peak near what is live. GOGC, when set, decides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// commandName is how the user called this: "kubectl nsguard" for the plugin, which kubectl
// runs as kubectl-nsguard.
var commandName = func() string {
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		return "kubectl nsguard"
	}
	return "nsguard"
}()

// named puts the name the user called this by into a text written for "nsguard".
func named(s string) string {
	if commandName == "nsguard" {
		return s
	}
	for _, sub := range []string{"audit", "explain", "offenders", "webhook", "-h"} {
		s = strings.ReplaceAll(s, "nsguard "+sub, commandName+" "+sub)
	}
	return strings.Replace(s, "nsguard finds", commandName+" finds", 1)
}

// usageError is a bad command line: exit status 2, with a hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

var errHelp = errors.New("help shown")

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	code := 0
	root := &cobra.Command{
		Use:           commandName,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q: want audit, explain, offenders or webhook", args[0])
			}
			fmt.Fprint(stderr, named(usage))
			code = 2
			return nil
		},
	}
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			fmt.Fprint(c.OutOrStdout(), named(usage))
			return
		}
		own, kube := pflag.NewFlagSet("", pflag.ContinueOnError), pflag.NewFlagSet("", pflag.ContinueOnError)
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Annotations[kubectlGroup]; ok {
				kube.AddFlag(f)
			} else {
				own.AddFlag(f)
			}
		})
		fmt.Fprintf(c.OutOrStdout(), "Usage: %s\n\nFlags:\n%s", named(c.Long), own.FlagUsages())
		if kube.HasFlags() {
			fmt.Fprintf(c.OutOrStdout(), "\nkubectl's flags, for the live cluster (without -f):\n%s", kube.FlagUsages())
		}
	})
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.CompletionOptions.DisableDefaultCmd = true
	for _, c := range []*cobra.Command{auditCommand(&code), explainCommand(&code), offendersCommand(&code), webhookCommand(&code)} {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
		root.AddCommand(c)
	}
	if err := oldSpellings(args); err != nil {
		return report(err, stderr)
	}
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		return report(err, stderr)
	}
	return code
}

func report(err error, stderr io.Writer) int {
	var ue usageError
	switch {
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintf(stderr, "%s: %v\n%s\n", commandName, err, named("Run 'nsguard -h' for usage."))
	default:
		fmt.Fprintf(stderr, "%s: %v\n", commandName, err)
	}
	return 2
}

// oldSpellings catches the Go flag spellings nsguard took before its flags read like
// kubectl's: -output json would now be read as -o utput.
func oldSpellings(args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "-output", "-kubeconfig", "-context", "-zone", "-fail-on", "-from", "-ndots", "-search", "-help", "-namespace", "-filename":
			return usagef("%s: flags take two dashes now, as in kubectl: use -%s", name, a)
		}
	}
	return nil
}
