package nsguard

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/nsguard/nsguard/internal/jsonlog"
	"k8s.io/klog/v2"
)

// withPluginLogger makes client-go's contextual logs under ctx say plugin/nsguard. The
// kubernetes plugin sets klog's global logger to its own, so without this an operator reads
// nsguard's failed watches and Events as plugin/kubernetes.
func withPluginLogger(ctx context.Context) context.Context {
	return klog.NewContext(ctx, logr.New(&pluginSink{}))
}

// pluginSink writes logr lines through nsguard's CoreDNS logger.
type pluginSink struct {
	values []any // key, value, ...: always of even length
}

func (*pluginSink) Init(logr.RuntimeInfo) {}

// Enabled keeps klog's default verbosity: client-go's V(1) and above is for debugging
// client-go, not for an operator.
func (*pluginSink) Enabled(level int) bool { return level <= 0 }

func (s *pluginSink) Info(_ int, msg string, kvs ...any) {
	if jsonlog.On() {
		jsonlog.Info(msg, s.attrs(nil, kvs)...)
		return
	}
	log.Info(s.line(msg, nil, kvs))
}

func (s *pluginSink) Error(err error, msg string, kvs ...any) {
	if jsonlog.On() {
		jsonlog.Error(msg, s.attrs(err, kvs)...)
		return
	}
	log.Error(s.line(msg, err, kvs))
}

// attrs are the error and the pairs as typed attributes, for a JSON record.
func (s *pluginSink) attrs(err error, kvs []any) []slog.Attr {
	var a []slog.Attr
	if err != nil {
		a = append(a, slog.String("error", err.Error()))
	}
	all := append(slices.Clip(s.values), kvs...)
	for i := 0; i < len(all); i += 2 {
		var v any = "(MISSING)"
		if i+1 < len(all) {
			v = all[i+1]
		}
		if e, ok := v.(error); ok {
			v = e.Error()
		}
		a = append(a, slog.Any(fmt.Sprint(all[i]), v))
	}
	return a
}

func (s *pluginSink) WithValues(kvs ...any) logr.LogSink {
	c := &pluginSink{values: append(slices.Clip(s.values), kvs...)}
	if len(c.values)%2 != 0 {
		c.values = append(c.values, "(MISSING)")
	}
	return c
}

func (s *pluginSink) WithName(string) logr.LogSink { return s }

// line is msg, the error and key=value pairs, strings quoted: client-go puts what failed
// (resource, reflector) in the pairs.
func (s *pluginSink) line(msg string, err error, kvs []any) string {
	var b strings.Builder
	b.WriteString(msg)
	if err != nil {
		b.WriteString(": ")
		b.WriteString(err.Error())
	}
	all := append(slices.Clip(s.values), kvs...)
	for i := 0; i < len(all); i += 2 {
		var v any = "(MISSING)"
		if i+1 < len(all) {
			v = all[i+1]
		}
		switch v := v.(type) {
		case string:
			fmt.Fprintf(&b, " %v=%q", all[i], v)
		case error:
			fmt.Fprintf(&b, " %v=%q", all[i], v.Error())
		default:
			fmt.Fprintf(&b, " %v=%v", all[i], v)
		}
	}
	return b.String()
}
