// Package resolvers builds and runs the real stub resolvers a pod may use
// (glibc, musl, Go's own, c-ares) against a given resolv.conf, so end-to-end tests see
// exactly what an application would see, search list and all.
package resolvers

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Sources are embedded so Build works from any working directory.
var (
	//go:embed clookup/lookup.c
	lookupC []byte
	//go:embed clookup/cares.c
	caresC []byte
	//go:embed golookup/main.go
	golookupGo []byte
)

// Kind names a stub resolver implementation.
type Kind int

const (
	Glibc Kind = iota // getaddrinfo from Debian's glibc (dynamically linked)
	Musl              // getaddrinfo from musl, as on Alpine (static)
	Go                // Go's pure resolver (net.Resolver{PreferGo: true})
	CAres             // ares_getaddrinfo from Debian's libc-ares, as Envoy resolves
)

func (k Kind) String() string {
	switch k {
	case Glibc:
		return "glibc"
	case Musl:
		return "musl"
	case Go:
		return "go"
	case CAres:
		return "c-ares"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Kinds lists every resolver, for table tests.
var Kinds = []Kind{Glibc, Musl, Go, CAres}

// Result is what one lookup gave: sorted addresses, or the resolver's error
// text (e.g. "Name does not resolve" from musl) when it failed to resolve.
type Result struct {
	Addrs []string
	Err   string
}

// OK reports whether the name resolved.
func (r Result) OK() bool { return r.Err == "" }

// Clients holds the built lookup programs.
type Clients struct {
	bins map[Kind]string
}

// caresHeader is the header of Debian's libc-ares-dev, which the c-ares client is built with.
const caresHeader = "/usr/include/ares.h"

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// tools are needed at Build (compilers, the c-ares header) or at Lookup (namespace + bind
// mount): a command on the PATH, or a file by its path.
var tools = []struct{ name, hint string }{
	{"gcc", "apt-get install gcc libc6-dev"},
	{"musl-gcc", "apt-get install musl-tools"},
	{"go", "install Go and put it on PATH"},
	{caresHeader, "apt-get install libc-ares-dev"},
	{"unshare", "apt-get install util-linux"},
	{"mount", "apt-get install mount"},
	{"sh", "apt-get install dash"},
}

// Build compiles the lookup programs into outDir. A missing tool is an error
// naming the package to install: the suite must fail, never skip.
func Build(ctx context.Context, outDir string) (*Clients, error) {
	for _, t := range tools {
		if _, err := exec.LookPath(t.name); err != nil && !fileExists(t.name) {
			return nil, fmt.Errorf("%s not found: %s", t.name, t.hint)
		}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("resolvers need root: lookups use unshare -m and mount --bind")
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	src := filepath.Join(outDir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	cFile, caresFile, goFile := filepath.Join(src, "lookup.c"), filepath.Join(src, "cares.c"), filepath.Join(src, "golookup.go")
	if err := os.WriteFile(cFile, lookupC, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(caresFile, caresC, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(goFile, golookupGo, 0o644); err != nil {
		return nil, err
	}
	c := &Clients{bins: map[Kind]string{
		Glibc: filepath.Join(outDir, "lookup-glibc"),
		Musl:  filepath.Join(outDir, "lookup-musl"),
		Go:    filepath.Join(outDir, "lookup-go"),
		CAres: filepath.Join(outDir, "lookup-cares"),
	}}
	builds := []struct {
		kind Kind
		env  []string
		argv []string
	}{
		{Glibc, nil, []string{"gcc", "-O2", "-Wall", "-o", c.bins[Glibc], cFile}},
		{Musl, nil, []string{"musl-gcc", "-static", "-O2", "-Wall", "-o", c.bins[Musl], cFile}},
		{CAres, nil, []string{"gcc", "-O2", "-Wall", "-o", c.bins[CAres], caresFile, "-lcares"}},
		// A lone file outside any module builds on its own; CGO_ENABLED=0 rules
		// out the cgo resolver at link time too.
		{Go, []string{"CGO_ENABLED=0", "GOWORK=off", "GOFLAGS="},
			[]string{"go", "build", "-o", c.bins[Go], goFile}},
	}
	for _, b := range builds {
		cmd := exec.CommandContext(ctx, b.argv[0], b.argv[1:]...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), b.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s client: %s: %v\n%s", b.kind, strings.Join(b.argv, " "), err, out)
		}
	}
	return c, nil
}

// CAresVersion is the version of the c-ares library the c-ares client runs with.
func (c *Clients) CAresVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, c.bins[CAres], "-version").Output()
	if err != nil {
		return "", fmt.Errorf("c-ares client: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// nsScript gives the program a private mount namespace whose /etc/resolv.conf
// is $1, as in a pod; the host's file is never touched. $2.. is the command.
const nsScript = `mount --make-rprivate / && mount --bind "$1" /etc/resolv.conf && shift && exec "$@"`

// Lookup resolves name with the given resolver as a pod with resolvConf would, from the
// host's network. A resolver failure is a Result with Err set; error is for harness failures.
func (c *Clients) Lookup(ctx context.Context, kind Kind, resolvConf, name string) (Result, error) {
	return c.lookup(kind, resolvConf, name, func(argv []string) *exec.Cmd {
		return exec.CommandContext(ctx, argv[0], argv[1:]...)
	})
}

// Netns runs commands inside a pod's network namespace; *podnet.Pod is one.
type Netns interface {
	Command(ctx context.Context, argv ...string) *exec.Cmd
}

// LookupInPod is Lookup from inside pod's network namespace: the queries leave from the pod's
// address, as they would from a real pod.
func (c *Clients) LookupInPod(ctx context.Context, pod Netns, kind Kind, resolvConf, name string) (Result, error) {
	return c.lookup(kind, resolvConf, name, func(argv []string) *exec.Cmd {
		return pod.Command(ctx, argv...)
	})
}

func (c *Clients) lookup(kind Kind, resolvConf, name string, command func([]string) *exec.Cmd) (Result, error) {
	bin, ok := c.bins[kind]
	if !ok {
		return Result{}, fmt.Errorf("unknown resolver %v", kind)
	}
	abs, err := filepath.Abs(resolvConf)
	if err != nil {
		return Result{}, err
	}
	cmd := command([]string{"unshare", "-m", "sh", "-c", nsScript, "sh", abs, bin, name})
	// netdns=go matters for the Go client only; harmless for the others.
	cmd.Env = append(os.Environ(), "GODEBUG=netdns=go")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	out := strings.TrimSpace(stdout.String())
	var exit *exec.ExitError
	switch {
	case err == nil:
		return parseAddrs(out)
	case errors.As(err, &exit) && exit.ExitCode() == 2 && strings.HasPrefix(out, "ERROR "):
		return Result{Err: strings.TrimPrefix(out, "ERROR ")}, nil
	default:
		return Result{}, fmt.Errorf("%v lookup %q: %v: %s%s", kind, name, err, out, stderr.String())
	}
}

// parseAddrs checks each line is an address and sorts them numerically.
func parseAddrs(out string) (Result, error) {
	var addrs []netip.Addr
	for _, l := range strings.Fields(out) {
		a, err := netip.ParseAddr(l)
		if err != nil {
			return Result{}, fmt.Errorf("lookup printed %q, not an address", l)
		}
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	r := Result{Addrs: []string{}}
	for _, a := range slices.Compact(addrs) {
		r.Addrs = append(r.Addrs, a.String())
	}
	return r, nil
}

// Binary is the path of kind's lookup program, for an image that runs it in a real Pod.
func (c *Clients) Binary(kind Kind) string { return c.bins[kind] }

// ParseOutput reads what a lookup program printed to stdout and its exit status, as Lookup
// does: addresses with 0, "ERROR <text>" with 2.
func ParseOutput(stdout string, exitCode int) (Result, error) {
	out := strings.TrimSpace(stdout)
	switch {
	case exitCode == 0:
		return parseAddrs(out)
	case exitCode == 2 && strings.HasPrefix(out, "ERROR "):
		return Result{Err: strings.TrimPrefix(out, "ERROR ")}, nil
	}
	return Result{}, fmt.Errorf("lookup exited %d: %s", exitCode, out)
}
