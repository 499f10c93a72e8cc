package nsguard

import (
	"github.com/coredns/coredns/plugin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Label values are all chosen by the operator or by nsguard, never by a client.
var (
	// namespaceApexAnswers counts NOERROR answers to <ns>.svc.<zone> names.
	namespaceApexAnswers = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "namespace_apex_answers_total",
		Help:      "Counter of NOERROR answers to namespace apex names (<namespace>.svc.<zone>), by answer kind (records or nodata) and action (logged, refused or allowed).",
	}, []string{"server", "zone", "view", "answer", "action"})

	// logLinesSuppressed counts log lines held back by the log limits.
	logLinesSuppressed = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "log_lines_suppressed_total",
		Help:      "Counter of log lines suppressed, by reason: repeat (the same client and question within log_interval) or limit (over log_limit lines per second).",
	}, []string{"server", "reason"})
)

// Values of the answer, action and reason labels.
const (
	answerRecords = "records"
	answerNoData  = "nodata"

	actionLogged  = "logged"
	actionRefused = "refused"
	actionAllowed = "allowed"

	reasonRepeat = "repeat"
	reasonLimit  = "limit"
)
