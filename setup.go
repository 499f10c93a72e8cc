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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nsguard/nsguard/clusterdns"
)

const pluginName = "nsguard"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

// Mode is what nsguard does with an answer it holds.
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
	zones           []string // nil: the cluster zones of the block, found at start-up
	mode            Mode
	shadows         Mode // endpoint_shadows
	rcode           int
	allowNamespaces map[string]struct{}
	allowClients    map[string]struct{}
	logInterval     time.Duration
	logLimit        int

	kubeconfig, kubeContext string // empty: in-cluster
	endpoint                string
	clients                 bool          // watch Pods to name clients
	podSelector             string        // of the Pods watched: spec.nodeName=NODE with 'node'; empty: every Pod
	findings                bool          // run the audit's checks as the cluster changes
	namespaceEvents         bool          // and record an Event on the Namespace of each
	events                  time.Duration // the interval of Kubernetes Events on client Pods; 0: off
}

// defaultEventInterval: a Pod's team hears of each name once in this long, as a series.
const defaultEventInterval = 10 * time.Minute

// kubeClientFor builds the client of a block's view and Events (config.kubernetesClient);
// tests give a fake clientset instead.
var kubeClientFor = config.kubernetesClient

func setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	g := New(cfg)
	client, err := kubeClientFor(cfg)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	if need := cfg.needsView(); client == nil && need != "" {
		return plugin.Error(pluginName, c.Errf("%s needs the cluster view, and this CoreDNS runs outside a cluster: "+
			"add 'kubeconfig PATH' or 'endpoint URL'", need))
	}
	conf := dnsserver.GetConfig(c)
	// The zones a bare nsguard guards, the trace plugin and the kubernetes plugin's caches are
	// known once every plugin of the block is set up. The block's view, Events and live
	// findings start then, or are handed over from the instance before a reload.
	keys := c.ServerBlockKeys
	c.OnStartup(func() error { return g.start(conf, keys, cfg, client) })
	c.OnShutdown(g.stop)
	c.OnRestartFailed(g.restartFailed)
	conf.AddPlugin(func(next plugin.Handler) plugin.Handler {
		g.Next = next
		return g
	})
	return nil
}

// needsView names the first option given that cannot work without a cluster view, or "".
func (cfg config) needsView() string {
	switch {
	case len(cfg.allowClients) > 0:
		return "'allow client'"
	case cfg.shadows == ModeRefuse:
		return "'endpoint_shadows refuse'"
	case cfg.events > 0:
		return "'events'"
	case cfg.namespaceEvents:
		return "'namespace_events'"
	case cfg.podSelector != "":
		return "'node'"
	}
	return ""
}

func parse(c *caddy.Controller) (config, error) {
	cfg := config{
		mode:            ModeLog,
		shadows:         ModeLog,
		rcode:           dns.RcodeNameError,
		allowNamespaces: map[string]struct{}{},
		allowClients:    map[string]struct{}{},
		logInterval:     defaultLogInterval,
		logLimit:        defaultLogLimit,
		clients:         true,
		findings:        true,
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
		switch {
		case !cfg.clients && len(cfg.allowClients) > 0:
			return cfg, c.Err("'clients off' and 'allow client' cannot work together: 'allow client' needs the Pods that 'clients off' stops watching")
		case !cfg.clients && cfg.podSelector != "":
			return cfg, c.Err("'clients off' and 'node' cannot work together: 'node' narrows the Pods that 'clients off' stops watching")
		case !cfg.clients && cfg.events > 0:
			return cfg, c.Err("'clients off' and 'events' cannot work together: Events go to the client Pods that 'clients off' stops watching")
		case cfg.namespaceEvents && !cfg.findings:
			return cfg, c.Err("'findings off' and 'namespace_events' cannot work together: the Events are those of the live findings")
		case cfg.shadows == ModeRefuse && cfg.mode == ModeLog:
			return cfg, c.Err("'endpoint_shadows refuse' needs 'mode refuse'")
		case seen["rcode"] && cfg.mode == ModeLog:
			log.Warningf("rcode %s has no effect in mode log; add \"mode refuse\" to refuse", dns.RcodeToString[cfg.rcode])
		}
	}
	return cfg, nil
}

func parseProperty(c *caddy.Controller, property string, cfg *config) error {
	switch property {
	case "mode":
		m, err := parseMode(c, property)
		cfg.mode = m
		return err
	case "endpoint_shadows":
		m, err := parseMode(c, property)
		cfg.shadows = m
		return err
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
		on, err := parseOnOff(c, property)
		cfg.clients = on
		return err
	case "node":
		v, err := singleArg(c)
		if err != nil {
			return err
		}
		if v == "" {
			return c.Err("empty node name: is the environment variable of 'node {$NODE_NAME}' set, from the Pod's spec.nodeName?")
		}
		if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
			return c.Errf("invalid node name %q: %s", v, strings.Join(errs, "; "))
		}
		cfg.podSelector = fields.OneTermEqualSelector("spec.nodeName", v).String()
	case "findings":
		on, err := parseOnOff(c, property)
		cfg.findings = on
		return err
	case "namespace_events":
		if len(c.RemainingArgs()) != 0 {
			return c.ArgErr()
		}
		cfg.namespaceEvents = true
	case "events":
		args := c.RemainingArgs()
		switch len(args) {
		case 0:
			cfg.events = defaultEventInterval
		case 1:
			d, err := time.ParseDuration(args[0])
			if err != nil || d <= 0 {
				return c.Errf("invalid events interval %q; expect a positive duration such as 10m", args[0])
			}
			cfg.events = d
		default:
			return c.ArgErr()
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

// parseMode reads the value of mode or endpoint_shadows.
func parseMode(c *caddy.Controller, property string) (Mode, error) {
	v, err := singleArg(c)
	if err != nil {
		return ModeLog, err
	}
	switch strings.ToLower(v) {
	case "log":
		return ModeLog, nil
	case "refuse":
		return ModeRefuse, nil
	}
	return ModeLog, c.Errf("unknown %s %q; expect 'log' or 'refuse'", property, v)
}

// parseOnOff reads the value of clients or findings.
func parseOnOff(c *caddy.Controller, property string) (bool, error) {
	v, err := singleArg(c)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(v) {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, c.Errf("unknown %s value %q; expect 'on' or 'off'", property, v)
}

// singleArg reads the one value of the current property.
func singleArg(c *caddy.Controller) (string, error) {
	args := c.RemainingArgs()
	if len(args) != 1 {
		return "", c.ArgErr()
	}
	return args[0], nil
}
