// Command demo (make demo) replays the incident nsguard exists for on a single-node Kubernetes
// cluster of real parts on this machine (test/e2e/node): client Pods for the glibc, musl, Go and
// c-ares resolvers fall into the trap on kubeadm's CoreDNS, nsguard is rolled out as
// docs/rollout.md says, names them, refuses the trap's answers, and the incident's fix gets them
// out of it. Then it removes everything. Every step checks what it tells: if the machine
// disagrees, it says so and exits 1.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/node"
)

const steps = 8

type demo struct {
	ctx   context.Context
	work  string
	root  string
	tty   bool
	step  int
	bin   string // kubectl and kubectl-nsguard, the PATH of the demo's shell
	n     *node.Node
	start time.Time
}

func main() { os.Exit(run()) }

func run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute) // a cold build takes long
	defer cancel()
	d := &demo{ctx: ctx, tty: isTerminal(os.Stdout), start: time.Now()}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "The demo runs a Kubernetes node on this machine (containerd, kubelet, kube-proxy): run it as root (sudo make demo).")
		return 1
	}
	var err error
	if d.work, err = os.MkdirTemp("", "nsguard-demo-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(d.work)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		cancel()
		fmt.Fprintf(os.Stderr, "\n%v: stopping the node; what is left, the next run removes first\n", s)
		d.n.Stop()
		coredns.StopAll()
		cluster.KillAll()
		os.RemoveAll(d.work)
		os.Exit(128 + int(s.(syscall.Signal)))
	}()

	d.intro()
	err = d.story()
	d.step = steps - 1
	d.header("Tearing down")
	if d.n != nil {
		if stopErr := d.n.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		d.say("kubelet, kube-proxy, containerd, its containers, kube-apiserver, etcd and the controllers stopped;")
		d.say("the routes, iptables rules, sysctls, mounts and cgroups the node added are removed.")
	}
	coredns.StopAll()
	cluster.KillAll()
	if err != nil {
		fmt.Printf("\nDEMO FAILED, and everything was torn down. The cause:\n    %s\n",
			strings.ReplaceAll(err.Error(), "\n", "\n    "))
		return 1
	}
	d.summary()
	d.say("The demo took %s.", time.Since(d.start).Round(time.Second))
	return 0
}

// story runs steps 1 to 7; each returns an error when what it saw is not what it tells.
func (d *demo) story() error {
	for _, s := range []func() error{d.build, d.cluster, d.trap, d.rollout, d.report, d.refuse, d.fix} {
		if err := s(); err != nil {
			return fmt.Errorf("step %d: %w", d.step, err)
		}
	}
	return nil
}

func (d *demo) intro() {
	d.bold("nsguard demo: how a namespace can capture a short name, and what nsguard does about it")
	fmt.Println("Everything runs on this machine and is removed at the end: a single-node Kubernetes cluster (etcd,")
	fmt.Println("kube-apiserver, controller manager, scheduler, kubelet, kube-proxy, containerd), kubeadm's CoreDNS, and")
	fmt.Println("real Pods for the glibc, musl, Go and c-ares resolvers. Nothing is pulled and nothing leaves the machine.")
}

func (d *demo) summary() {
	fmt.Println()
	d.bold("What you saw")
	d.say(`Pods in new-namespace-1 looked up "my-app". Their search list, written by kubelet, turned that into
my-app.svc.cluster.local, which cluster DNS reads as the namespace my-app. musl (Alpine) failed there;
glibc, Go and c-ares went on to my-app.corp.example, a different host. None reached the Service meant.
nsguard, rolled out with kubectl apply -k as docs/rollout.md says, named each Pod in its log and in an
Event on the Pod, and nsguard offenders read kubectl logs back as one row per Pod. In mode refuse every
resolver moved past the namespace. The fix that reaches the right Service is in the cluster: an
ExternalName Service my-app in the client's namespace.`)
	fmt.Println()
	d.bold("Next")
	d.say(`make test        runs the unit and end-to-end tests, as CI does; make test-node the node's alone
README.md        the nsguard directive, where it must sit among the plugins, and its metrics
docs/rollout.md  rolling nsguard out to a cluster, step by step`)
}

// header starts a step, saying how long the demo has run so far.
func (d *demo) header(title string) {
	d.step++
	fmt.Println()
	d.bold(fmt.Sprintf("[%d/%d] %s (at %s)", d.step, steps, title, time.Since(d.start).Round(time.Second)))
}

func (d *demo) bold(s string) {
	if d.tty {
		s = "\x1b[1m" + s + "\x1b[0m"
	}
	fmt.Println(s)
}

// say prints text indented under the current step.
func (d *demo) say(format string, args ...any) { fmt.Println(indent(fmt.Sprintf(format, args...), 4)) }

// show prints program output, indented one level deeper than say.
func (d *demo) show(text string) { fmt.Println(indent(strings.TrimRight(text, "\n"), 8)) }

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
