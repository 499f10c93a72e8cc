package nsguard

import (
	"context"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"

	"k8s.io/klog/v2"

	"github.com/nsguard/nsguard/clusterview"
)

// initView gives g its cluster view and Events, and returns what starts and stops them, as
// the kubernetes plugin's InitKubeCache does.
func (g *NSGuard) initView(conf *dnsserver.Config, cfg config, client *kubeClient) (onStart, onShut func() error) {
	gauges := &viewGauges{}
	logger := klog.FromContext(withPluginLogger(context.Background()))
	v := clusterview.New(clusterview.Config{
		Client: client, REST: client.rest, Clients: cfg.clients, UIDs: cfg.events > 0, PodFieldSelector: cfg.podSelector,
		OnSynced: gauges.synced, OnStale: gauges.stale, Logger: &logger,
	})
	g.view = v
	if cfg.events > 0 || cfg.namespaceEvents {
		interval := cfg.events
		if interval == 0 {
			interval = defaultEventInterval
		}
		g.events = newEventer(v, client, interval, g.apexFix)
		g.podEvents = cfg.events > 0
	}
	var run *clusterview.Run
	var live *liveFindings
	onStart = func() error {
		gauges.servers = serverAddrs(conf)
		claimGauges(gauges)
		gauges.start()
		// Found at start-up: every plugin of the block has been set up by then.
		ctl := kubernetesController(conf.Handler("kubernetes"))
		if ctl != nil {
			log.Info("cluster view reads Services, EndpointSlices and Namespaces from the kubernetes plugin's caches")
		} else {
			log.Info("cluster view watches Services, EndpointSlices and Namespaces itself: no kubernetes plugin in this server block")
		}
		run = v.Start(ctl)
		if cfg.findings {
			// Lines of their own limits, so that answer lines and their counts stay as they were.
			live = newLiveFindings(v, g.zones, cfg.allowNamespaces, newLogLimiter(cfg.logInterval, cfg.logLimit), gauges.servers)
			if cfg.namespaceEvents {
				live.events = g.events
			}
			live.start()
		}
		if g.events != nil {
			return g.events.start()
		}
		return nil
	}
	onShut = func() error {
		var err error
		if g.events != nil {
			err = g.events.stop()
		}
		if live != nil {
			live.stop()
		}
		run.Stop()
		releaseGauges(gauges)
		return err
	}
	return onStart, onShut
}

// kubernetesController is the kubernetes plugin's cache of the cluster, or nil without one.
func kubernetesController(h plugin.Handler) clusterview.Controller {
	if k, ok := h.(*kubernetes.Kubernetes); ok && k.APIConn != nil {
		return k.APIConn
	}
	return nil
}
