package nsguard

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
)

const pluginName = "nsguard"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

// Mode is what nsguard does with an answer that came through a namespace.
type Mode uint8

const (
	ModeLog    Mode = iota // write the answer unchanged and log it
	ModeRefuse             // answer with the configured rcode instead
)

func (m Mode) String() string {
	if m == ModeRefuse {
		return "refuse"
	}
	return "log"
}

// Defaults of the log limits: enough to see every offender within minutes, never a flood.
const (
	defaultLogInterval = time.Minute
	defaultLogLimit    = 10
)

// config is one nsguard block of a Corefile.
type config struct {
	zones           []string
	mode            Mode
	rcode           int
	allowNamespaces map[string]struct{}
	allowClients    map[string]struct{}
	logInterval     time.Duration
	logLimit        int

	kubeconfig, kubeContext string // empty: in-cluster
	endpoint                string
	clients                 bool // watch Pods to name clients
}

func setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	g := New(cfg)
	v := newView()
	client, err := cfg.kubernetesClient(v)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	if client != nil {
		g.view = v
		g.watcher = &watcher{client: client, view: v, clients: cfg.clients}
		c.OnStartup(g.watcher.start)
		c.OnShutdown(g.watcher.stop)
	}
	c.OnStartup(func() error {
		view := "no cluster view: core checks only"
		if client != nil {
			view = "with a cluster view"
		}
		log.Infof("mode %s for zones %s, %s", cfg.mode, strings.Join(cfg.zones, " "), view)
		return nil
	})
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		g.Next = next
		return g
	})
	return nil
}

func parse(c *caddy.Controller) (config, error) {
	cfg := config{
		mode:            ModeLog,
		rcode:           dns.RcodeNameError,
		allowNamespaces: map[string]struct{}{},
		allowClients:    map[string]struct{}{},
		logInterval:     defaultLogInterval,
		logLimit:        defaultLogLimit,
		clients:         true,
	}
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return cfg, c.Errf("%v", plugin.ErrOnce)
		}
		zones, err := parseZones(c, c.RemainingArgs())
		if err != nil {
			return cfg, err
		}
		cfg.zones = zones

		seen := map[string]bool{}
		for c.NextBlock() {
			property := c.Val()
			if seen[property] && property != "allow" {
				return cfg, c.Errf("property %q given twice", property)
			}
			seen[property] = true
			if err := parseProperty(c, property, &cfg); err != nil {
				return cfg, err
			}
		}
		if seen["rcode"] && cfg.mode == ModeLog {
			log.Warningf("rcode %s has no effect in mode log; add \"mode refuse\" to refuse", dns.RcodeToString[cfg.rcode])
		}
	}
	return cfg, nil
}

func parseProperty(c *caddy.Controller, property string, cfg *config) error {
	switch property {
	case "mode":
		v, err := singleArg(c)
		if err != nil {
			return err
		}
		switch strings.ToLower(v) {
		case "log":
			cfg.mode = ModeLog
		case "refuse":
			cfg.mode = ModeRefuse
		default:
			return c.Errf("unknown mode %q; expect 'log' or 'refuse'", v)
		}
	case "rcode":
		v, err := singleArg(c)
		if err != nil {
			return err
		}
		switch strings.ToUpper(v) {
		case "NXDOMAIN":
			cfg.rcode = dns.RcodeNameError
		case "REFUSED":
			cfg.rcode = dns.RcodeRefused
		default:
			return c.Errf("unknown rcode %q; expect 'NXDOMAIN' or 'REFUSED'", v)
		}
	case "allow":
		args := c.RemainingArgs()
		if len(args) < 2 {
			return c.ArgErr()
		}
		into := cfg.allowNamespaces
		switch args[0] {
		case "namespace":
		case "client":
			into = cfg.allowClients
		default:
			return c.Errf("unknown allow kind %q; expect 'namespace' or 'client'", args[0])
		}
		for _, ns := range args[1:] {
			if !clusterdns.IsDNSLabel(ns) {
				return c.Errf("invalid namespace name %q: a namespace is an RFC 1123 label", ns)
			}
			into[strings.ToLower(ns)] = struct{}{}
		}
	case "kubeconfig":
		args := c.RemainingArgs()
		if len(args) < 1 || len(args) > 2 {
			return c.ArgErr()
		}
		cfg.kubeconfig = args[0]
		if len(args) == 2 {
			cfg.kubeContext = args[1]
		}
	case "endpoint":
		v, err := singleArg(c)
		if err != nil {
			return err
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c.Errf("invalid endpoint %q; expect a URL such as https://10.0.0.1:6443", v)
		}
		cfg.endpoint = v
	case "clients":
		v, err := singleArg(c)
		if err != nil {
			return err
		}
		switch strings.ToLower(v) {
		case "on":
			cfg.clients = true
		case "off":
			cfg.clients = false
		default:
			return c.Errf("unknown clients value %q; expect 'on' or 'off'", v)
		}
	case "log_interval":
		v, err := singleArg(c)
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c.Errf("invalid log_interval %q; expect a positive duration such as 1m", v)
		}
		cfg.logInterval = d
	case "log_limit":
		v, err := singleArg(c)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c.Errf("invalid log_limit %q; expect lines per second, 1 or more", v)
		}
		cfg.logLimit = n
	default:
		return c.Errf("unknown property %q", property)
	}
	return nil
}

// parseZones returns the block's zones, or the server block's when none are given.
// Unlike plugin.OriginsFromArgsOrServerBlock it rejects what it cannot use.
func parseZones(c *caddy.Controller, args []string) ([]string, error) {
	server := plugin.OriginsFromArgsOrServerBlock(nil, c.ServerBlockKeys)
	if len(server) == 0 {
		server = []string{"."}
	}
	if len(args) == 0 {
		return lower(server), nil
	}
	var zones []string
	for _, a := range args {
		zs := plugin.Host(a).NormalizeExact()
		if len(zs) == 0 {
			return nil, c.Errf("invalid zone %q", a)
		}
		for _, z := range zs {
			if !isZoneName(z) {
				return nil, c.Errf("invalid zone %q", a)
			}
			if plugin.Zones(server).Matches(z) == "" {
				return nil, c.Errf("zone %q is not under the server block's zones %s", a, strings.Join(server, " "))
			}
		}
		zones = append(zones, zs...)
	}
	return lower(zones), nil
}

// isZoneName reports whether z is a fully qualified name of hostname labels, or the root.
func isZoneName(z string) bool {
	if z == "." {
		return true
	}
	for _, l := range strings.Split(strings.TrimSuffix(z, "."), ".") {
		if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			return false
		}
	}
	return true
}

func lower(zones []string) []string {
	out := make([]string, len(zones))
	for i, z := range zones {
		out[i] = strings.ToLower(z)
	}
	return out
}

// singleArg reads the one value of the current property.
func singleArg(c *caddy.Controller) (string, error) {
	args := c.RemainingArgs()
	if len(args) != 1 {
		return "", c.ArgErr()
	}
	return args[0], nil
}
