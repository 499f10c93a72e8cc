package events

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsguard/nsguard/clusterdns"
)

// eventFor is what one Event says, and of what.
type eventFor struct {
	namespace            string
	regarding            corev1.ObjectReference // UID empty: looked up when written
	reason, action, note string
}

func (w *Worker) podEvent(o Offer, typed, uid string) eventFor {
	ns, pod, _ := strings.Cut(o.Pod, "/")
	reason := reasonApex
	if o.Kind == Shadow {
		reason = reasonShadow
	}
	return eventFor{
		namespace: ns,
		regarding: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: pod, UID: types.UID(uid)},
		reason:    reason, action: eventAction(typed), note: w.note(o, typed),
	}
}

// namespaceEvent is the Event of a live finding, on the Namespace it is about. A Namespace
// is cluster-scoped, and the API server keeps the Events of such objects in namespace
// default. The view keeps no Namespace's UID, which ties an Event to its object: write
// reads it.
func namespaceEvent(f *NamespaceFinding) eventFor {
	note := strings.ToValidUTF8(f.Severity+": "+f.Message+". Fix: "+f.Fix, "?")
	if len(note) > maxNote {
		note = clip(note, maxNote-3) + "..."
	}
	return eventFor{
		namespace: metav1.NamespaceDefault,
		regarding: corev1.ObjectReference{Kind: "Namespace", APIVersion: "v1", Name: f.Namespace},
		reason:    findingReasons[f.Check], action: clip("Audit "+f.Check, maxAction), note: note,
	}
}

// write adds to the key's series, or creates its Event when it has none the API server keeps.
func (w *Worker) write(ctx context.Context, s *sent, at time.Time, ev eventFor) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	events := w.cfg.Client.EventsV1().Events(ev.namespace)
	now := metav1.NewMicroTime(at)
	if s.name != "" {
		patch, err := json.Marshal(map[string]eventsv1.EventSeries{"series": {Count: s.count + 1, LastObservedTime: now}})
		if err != nil {
			return err
		}
		_, err = events.Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			s.count++
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		s.name = "" // expired (the API server's event TTL) or deleted: start again
	}
	if ev.regarding.Kind == "Namespace" {
		n, err := w.cfg.Client.CoreV1().Namespaces().Get(ctx, ev.regarding.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ev.regarding.UID = n.UID
	}
	made, err := events.Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: eventName(ev.regarding.Name, at), Namespace: ev.namespace},
		EventTime:           now,
		Regarding:           ev.regarding,
		Type:                corev1.EventTypeWarning,
		Reason:              ev.reason,
		Action:              ev.action,
		Note:                ev.note,
		ReportingController: controller,
		ReportingInstance:   w.instance,
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.name, s.count = made.Name, 1
	return nil
}

// typedName is what the client most likely typed: a namespace's name, or <endpoint>.<service>.
func typedName(o Offer) string {
	if o.Kind == Shadow {
		return o.Name.ShadowFix().Typed()
	}
	return strings.ToLower(o.Name.Namespace)
}

// eventAction is "Resolve <typed name>" within the API's 128 characters. A longer name (an
// endpoint and a Service of 63 characters each make 135) keeps its start and a hash of the
// whole, so that two long names still read apart.
func eventAction(typed string) string {
	a := "Resolve " + typed
	if len(a) <= maxAction {
		return a
	}
	h := fnv.New32a()
	h.Write([]byte(typed))
	tail := fmt.Sprintf("~%08x", h.Sum32())
	return clip(a, maxAction-len(tail)) + tail
}

// eventName is a name of the Pod's, unique in time, as client-go makes them; a Pod name near
// the 253 characters a name may have is cut, so that the Event's still is one.
func eventName(pod string, at time.Time) string {
	suffix := fmt.Sprintf(".%x", at.UnixNano())
	return strings.TrimRight(clip(pod, maxName-len(suffix)), ".-") + suffix
}

// clip cuts s to at most n bytes of valid UTF-8: the API server counts bytes, and an invalid
// sequence would come back longer as U+FFFD.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// note says what was typed, what answered and what to change, as the log line does.
func (w *Worker) note(o Offer, typed string) string {
	var s string
	if o.Kind == Apex {
		got := "no records (NODATA)"
		if o.Records {
			got = "the records of its ExternalName Services"
		}
		f := clusterdns.ApexFix{Name: typed, Zone: o.Name.Zone}
		if advise := w.advise.Load(); advise != nil {
			f = (*advise)(o)
		}
		s = fmt.Sprintf("%s %s, what the search list makes of %q, was answered through namespace %s, not a Service: %s. %s. Fix: %s",
			o.QName, dns.Type(o.QType), typed, f.Name, got, actionNote(o.Refused), f.String())
	} else {
		f := o.Name.ShadowFix()
		s = fmt.Sprintf("%s %s, what the search list makes of %q (%s), was answered by %s. %s. Fix: %s",
			o.QName, dns.Type(o.QType), typed, f.Meant(), f.Got(), actionNote(o.Refused), f.String())
	}
	if s = strings.ToValidUTF8(s, "?"); len(s) > maxNote {
		s = clip(s, maxNote-3) + "..."
	}
	return s
}

func actionNote(refused bool) string {
	if refused {
		return "nsguard refused the answer, so the lookup went on to the next search domain"
	}
	return "nsguard let the answer through and logged it"
}
