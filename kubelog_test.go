package nsguard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// client-go's contextual logs under withPluginLogger say plugin/nsguard, even with klog's
// global logger set to another plugin's, as the kubernetes plugin sets it.
func TestPluginLogger(t *testing.T) {
	buf := captureLog(t)
	var global strings.Builder
	klog.SetLogger(funcr.New(func(prefix, args string) { global.WriteString("plugin/kubernetes: " + args + "\n") }, funcr.Options{}))
	t.Cleanup(klog.ClearLogger)

	ctx := withPluginLogger(context.Background())
	if !cache.WaitForNamedCacheSyncWithContext(ctx, func() bool { return true }) {
		t.Fatal("not synced")
	}
	logger := klog.FromContext(ctx).WithValues("resource", "pods")
	logger.Error(errors.New("connection refused"), "Failed to watch", "attempt", 3)
	logger.V(4).Info("debugging client-go")

	tests := []struct{ want string }{
		{"[INFO] plugin/nsguard: Waiting for caches to sync\n"},
		{"[INFO] plugin/nsguard: Caches are synced\n"},
		{`[ERROR] plugin/nsguard: Failed to watch: connection refused resource="pods" attempt=3` + "\n"},
	}
	got := buf.String()
	for _, tc := range tests {
		if !strings.Contains(got, tc.want) {
			t.Errorf("log lacks %q:\n%s", tc.want, got)
		}
	}
	if strings.Contains(got, "debugging") {
		t.Errorf("V(4) reached the log:\n%s", got)
	}
	if global.Len() > 0 {
		t.Errorf("lines went to klog's global logger:\n%s", global.String())
	}
	var _ logr.LogSink = &pluginSink{}
}
