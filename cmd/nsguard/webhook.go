package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/webhook"
)

const webhookSynopsis = `nsguard webhook --tls-cert-file FILE --tls-private-key-file FILE [--kubeconfig FILE]
                       [--bind-address IP] [--secure-port PORT] [--zone ZONE] [--deny]
                       [--allow-namespace NAME]...

A validating admission webhook: it tells the person who creates a Namespace or a
Service, or deletes a Service, when the change makes a short name answer through a
namespace, with one warning each (kubectl prints them), in audit's words:
namespace-captures-service, reserved-namespace, alias-through-namespace. It allows
every change; with --deny it refuses the CREATEs it would warn of.

It keeps the names of Namespaces and Services only (metadata-only informers: list and
watch), answers from memory, and never calls the API server on a review. Until its
informers have synced it allows everything unchecked, and /readyz fails. It serves
POST /validate, /healthz and /readyz over HTTPS, and reloads the certificate and key
when the files change. Without --kubeconfig it uses the Pod's service account.
Register it with failurePolicy Ignore: deploy/webhook holds the manifests, and
docs/webhook.md says how to roll it out and take it away.`

func webhookCommand(code *int) *cobra.Command {
	var (
		kubeconfig string
		cfg        = webhook.Config{BindAddress: "0.0.0.0", SecurePort: 9443, ShutdownDelay: 5 * time.Second}
		zone       string
		allow      []string
		verbosity  int
	)
	c := newCommand("webhook", webhookSynopsis, code, func(c *cobra.Command, pos []string) (int, error) {
		if len(pos) > 0 {
			return 2, usagef("webhook takes no arguments, got %q", pos[0])
		}
		if err := checkWebhookFlags(&cfg, zone, allow); err != nil {
			return 2, err
		}
		rc, err := restConfig(kubeconfig)
		if err != nil {
			return 2, err
		}
		logs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(logs)
		_ = logs.Set("v", fmt.Sprint(verbosity))
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := webhook.Run(ctx, cfg, rc); err != nil {
			return 1, err
		}
		return 0, nil
	})
	fs := c.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster to watch; empty: the Pod's service account")
	fs.StringVar(&cfg.BindAddress, "bind-address", cfg.BindAddress, "address to serve HTTPS on")
	fs.IntVar(&cfg.SecurePort, "secure-port", cfg.SecurePort, "port to serve HTTPS on")
	fs.StringVar(&cfg.CertFile, "tls-cert-file", "", "serving certificate (PEM, with its chain), reloaded when it changes; required")
	fs.StringVar(&cfg.KeyFile, "tls-private-key-file", "", "its private key (PEM), reloaded when it changes; required")
	fs.StringVar(&zone, "zone", "cluster.local", "cluster DNS zone")
	fs.BoolVar(&cfg.Policy.Deny, "deny", false, "refuse the CREATE of a Namespace or Service it would warn of, instead of warning")
	fs.StringSliceVar(&allow, "allow-namespace", nil, "namespace meant to answer its bare name, as nsguard's 'allow namespace': its captures are not told; repeatable or comma-separated")
	fs.DurationVar(&cfg.ShutdownDelay, "shutdown-delay-duration", cfg.ShutdownDelay, "on SIGTERM, how long to go on serving with /readyz failing, so that the API server stops sending reviews first")
	fs.IntVarP(&verbosity, "v", "v", 0, "log verbosity (klog)")
	return c
}

func checkWebhookFlags(cfg *webhook.Config, zone string, allow []string) error {
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return usagef("--tls-cert-file and --tls-private-key-file are required: the API server calls webhooks over HTTPS")
	}
	if cfg.SecurePort < 1 || cfg.SecurePort > 65535 {
		return usagef("--secure-port %d: want 1 to 65535", cfg.SecurePort)
	}
	if err := clusterdns.CheckName(zone); err != nil {
		return usagef("--zone %q: %v", zone, err)
	}
	if cfg.ShutdownDelay < 0 {
		return usagef("--shutdown-delay-duration %v: want 0 or more", cfg.ShutdownDelay)
	}
	cfg.Policy.Zone = strings.ToLower(strings.TrimSuffix(zone, "."))
	cfg.Policy.Allow = map[string]bool{}
	for _, a := range allow {
		ns, err := checkNamespace(a)
		if err != nil || ns == "" {
			return usagef("--allow-namespace %q: not a namespace name (letters, digits and '-', at most 63)", a)
		}
		cfg.Policy.Allow[ns] = true
	}
	return nil
}

// restConfig is the API server's address and credentials: the kubeconfig file, or the
// Pod's service account, as Kubernetes components take them.
func restConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig == "" {
		if rc, err = rest.InClusterConfig(); err != nil {
			return nil, usagef("not in a Pod (%v): give --kubeconfig", err)
		}
	} else if rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, usagef("--kubeconfig %s: %v", kubeconfig, err)
	}
	rc.UserAgent = "nsguard-webhook"
	return rc, nil
}
