// Command demo (make demo) replays the incident nsguard exists for on a real kube-apiserver,
// a real CoreDNS with nsguard and the real glibc, musl, Go and c-ares resolvers, and tears it all
// down. Every step checks what it tells: if the machine disagrees, it says so and exits 1.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

const (
	dnsIP    = "127.53.20.1" // the demo's own address: stub resolvers only talk to port 53
	clientIP = "127.0.0.1"   // loopback queries come from here, so this is the client pod's IP
	steps    = 9
)

type demo struct {
	ctx        context.Context
	work       string
	tty        bool
	step       int
	toolsBin   string
	corednsBin string
	cliBin     string
	clients    *resolvers.Clients
	cp         *cluster.ControlPlane
	dns        *coredns.Server
	cfg        coredns.Config
	resolvConf string
	once       sync.Once
	stopping   atomic.Bool // a signal came: its handler tears down and exits
}

func main() { os.Exit(run()) }

func run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute) // a cold build is ~12 min
	defer cancel()
	d := &demo{ctx: ctx, tty: isTerminal(os.Stdout)}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "The demo binds port 53 and gives each lookup its own mount namespace: run it as root (sudo make demo).")
		return 1
	}
	var err error
	if d.work, err = os.MkdirTemp("", "nsguard-demo-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Backstops: whatever happens, nothing keeps running and the work dir goes.
	defer d.teardown()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		d.stopping.Store(true)
		cancel()
		// The cluster package's own handler kills its processes and re-raises the
		// signal, which may end us any moment: the files go first. CoreDNS dies
		// with us anyway (Pdeathsig).
		os.RemoveAll(d.work)
		fmt.Fprintf(os.Stderr, "\n%v: stopping CoreDNS, kube-apiserver and etcd\n", s)
		d.teardown()
		os.Exit(128 + int(s.(syscall.Signal)))
	}()

	d.intro()
	err = d.story()
	if d.stopping.Load() {
		select {} // the signal handler exits; its errors are not the story's
	}
	d.step = steps - 1 // teardown is the last step, wherever the story stopped
	d.header("Tearing down")
	if stopErr := d.stop(); stopErr != nil && err == nil {
		err = stopErr
	}
	if err != nil && d.dns != nil {
		fmt.Println("\nThe CoreDNS log, last lines:")
		d.show(tail(d.dns.Log(), 20))
	}
	if err != nil {
		fmt.Printf("\nDEMO FAILED, and everything was torn down. The cause:\n    %s\n",
			strings.ReplaceAll(err.Error(), "\n", "\n    "))
		return 1
	}
	d.summary()
	return 0
}

// story runs steps 1 to 8; each returns an error when what it saw is not what it tells.
func (d *demo) story() error {
	for _, s := range []func() error{d.build, d.cluster, d.startDNS, d.trap, d.report, d.kubeDNS, d.refuse, d.fix} {
		if err := s(); err != nil {
			return fmt.Errorf("step %d: %w", d.step, err)
		}
	}
	return nil
}

// stop is the orderly teardown of step 9; teardown is the backstop.
func (d *demo) stop() error {
	var err error
	if d.dns != nil {
		if err = d.dns.Stop(); err == nil {
			d.say("CoreDNS stopped; %s:53 is free again.", dnsIP)
		}
	}
	if d.cp != nil {
		d.cp.Stop()
		d.say("kube-apiserver and etcd stopped.")
	}
	d.teardown()
	d.say("Removed %s.", d.work)
	return err
}

func (d *demo) teardown() {
	d.once.Do(func() {
		coredns.StopAll()
		cluster.KillAll()
		os.RemoveAll(d.work)
	})
}

func (d *demo) intro() {
	d.bold("nsguard demo: how a namespace can capture a short name, and what nsguard does about it")
	fmt.Println("Everything runs on this machine and is removed at the end: a real kube-apiserver and etcd,")
	fmt.Println("CoreDNS with nsguard, and the real glibc, musl, Go and c-ares resolvers seeing a pod's /etc/resolv.conf.")
}

func (d *demo) summary() {
	fmt.Println()
	d.bold("What you saw")
	d.say(`A pod in new-namespace-1 looked up "my-app". Its search list turned that into my-app.svc.cluster.local,
which cluster DNS reads as the namespace my-app. On CoreDNS musl (Alpine) failed there, glibc, Go and
c-ares went on to my-app.corp.example, a different host; on kube-dns every resolver reached other-app-1
or other-app-2, changing from one lookup to the next, or glibc failed, or c-ares went on to
my-app.corp.example. None reached the Service meant.
nsguard, in log mode, said who asked, what they typed, what they got and what to change; it put an
Event on the Pod for its team, and counted it by the client's namespace in
coredns_nsguard_namespace_apex_answers_total: alert on that counter's rate. nsguard offenders read
the log back as one row per client and name.
mode refuse made every resolver move past the namespace, on CoreDNS and on kube-dns alike; with
rcode REFUSED glibc, musl and c-ares stopped there and failed, as nsguard explain predicted. The fix
that reaches the right Service is in the cluster: an ExternalName Service my-app in the client's
namespace.`)
	fmt.Println()
	d.bold("Next")
	d.say(`make test        runs the unit and end-to-end tests, as CI does
README.md        the nsguard directive, where it must sit among the plugins, and its metrics
docs/rollout.md  rolling nsguard out to a cluster, step by step`)
}

func (d *demo) header(title string) {
	d.step++
	fmt.Println()
	d.bold(fmt.Sprintf("[%d/%d] %s", d.step, steps, title))
}

func (d *demo) bold(s string) {
	if d.tty {
		s = "\x1b[1m" + s + "\x1b[0m"
	}
	fmt.Println(s)
}

// say prints text indented under the current step.
func (d *demo) say(format string, args ...any) { fmt.Println(indent(fmt.Sprintf(format, args...), 4)) }

// show prints program output or a file, indented one level deeper than say.
func (d *demo) show(text string) { fmt.Println(indent(strings.TrimRight(text, "\n"), 8)) }

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

func tail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
