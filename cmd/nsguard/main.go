// Command nsguard finds the Kubernetes names that cluster DNS answers through a namespace,
// an endpoint or a broken alias, from manifests or a live cluster, and ranks the clients
// that nsguard's log lines show asking for them.
//
//	nsguard audit     [-f PATH]... [--kubeconfig FILE] [--context NAME] [--output table|json|github] [--fail-on SEVERITY]
//	nsguard explain   NAME --from NAMESPACE [-f PATH]... [--ndots N] [--search "D1 D2"] [--zone ZONE]
//	nsguard offenders [-f FILE]... [FILE]... [--output table|json|github]
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

const usage = `nsguard finds names that Kubernetes cluster DNS answers through a namespace,
an endpoint or a broken alias.

Usage:
  nsguard audit     [flags]                 list every finding
  nsguard explain   NAME --from NAMESPACE [flags]
                                            show each search candidate and its answer
  nsguard offenders [flags] [FILE]...       rank the clients in nsguard's log lines

For audit and explain, cluster state comes from -f (files, directories, or - for
stdin; YAML or JSON, multi-document, List kinds, kubectl get -o yaml) or, without -f,
from the live cluster of the current kubeconfig context (only list calls).
offenders reads CoreDNS logs from files (-f or arguments) or stdin, such as
kubectl -n kube-system logs -l k8s-app=kube-dns --prefix --timestamps.

Exit status: 0 nothing found, 1 findings (audit: at or above --fail-on; explain:
the winning answer is not what the name most likely meant; offenders: any row),
2 usage or input error.

Run 'nsguard audit -h', 'nsguard explain -h' or 'nsguard offenders -h' for the flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usageError is a bad command line: exit status 2, with a hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var (
		code int
		err  error
	)
	switch args[0] {
	case "audit":
		code, err = runAudit(args[1:], stdin, stdout, stderr)
	case "explain":
		code, err = runExplain(args[1:], stdin, stdout, stderr)
	case "offenders":
		code, err = runOffenders(args[1:], stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usagef("unknown command %q: want audit, explain or offenders", args[0])
	}
	var ue usageError
	switch {
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "nsguard: %v\nRun 'nsguard -h' for usage.\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "nsguard: %v\n", err)
		return 2
	}
	return code
}
