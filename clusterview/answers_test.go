package clusterview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	golog "log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// apiServer stands in for kube-apiserver as the view's Pod reflector meets it: lists, watches and
// streamed lists of Pods, answered the way a server, or a proxy in front of it, is set to.
type apiServer struct {
	t    testing.TB
	pods []*corev1.Pod
	url  string

	jsonOnly      bool         // answers JSON whatever the client accepts, as some API proxies do
	refuseStreams bool         // 422 to sendInitialEvents, as kube-apiserver with its WatchList feature off
	group         atomic.Value // the apiVersion of Pods and PodLists sent; "v1" unless set

	lists, streams, refused atomic.Int64
	mu                      sync.Mutex
	watches                 []chan watch.Event // open watches, to push events to
}

const standInVersion = "100"

func newAPIServer(t testing.TB, pods ...*corev1.Pod) *apiServer {
	s := &apiServer{t: t, pods: pods}
	s.group.Store("v1")
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	t.Cleanup(s.closeWatches) // before srv.Close, which waits for open requests
	s.url = srv.URL
	return s
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	mediaType := runtime.ContentTypeJSON
	if strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) && !s.jsonOnly {
		mediaType = runtime.ContentTypeProtobuf
	}
	switch {
	case r.URL.Path == "/api/v1/services": // the probe
		s.write(w, mediaType, http.StatusOK, &corev1.ServiceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceList"},
			ListMeta: metav1.ListMeta{ResourceVersion: standInVersion}})
	case r.URL.Path != "/api/v1/pods":
		http.NotFound(w, r)
	case q.Get("watch") != "true":
		s.lists.Add(1)
		l := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: s.group.Load().(string), Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: standInVersion}}
		if q.Get("limit") != "1" {
			for _, p := range s.pods {
				l.Items = append(l.Items, *p)
			}
		}
		s.write(w, mediaType, http.StatusOK, l)
	case q.Get("sendInitialEvents") == "true" && s.refuseStreams:
		s.refused.Add(1)
		err := apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", field.ErrorList{
			field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")})
		err.ErrStatus.APIVersion, err.ErrStatus.Kind = "v1", "Status"
		s.write(w, mediaType, http.StatusUnprocessableEntity, &err.ErrStatus)
	default:
		s.watch(w, r, mediaType, q.Get("sendInitialEvents") == "true")
	}
}

// write answers with obj in mediaType.
func (s *apiServer) write(w http.ResponseWriter, mediaType string, code int, obj runtime.Object) {
	w.Header().Set("Content-Type", mediaType)
	w.WriteHeader(code)
	w.Write(s.encode(mediaType, obj))
}

func (s *apiServer) encode(mediaType string, obj runtime.Object) []byte {
	if mediaType == runtime.ContentTypeJSON {
		b, err := json.Marshal(obj)
		if err != nil {
			s.t.Error(err)
		}
		return b
	}
	var b bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &b); err != nil {
		s.t.Error(err)
	}
	return b.Bytes()
}

// watch streams the Pods first when streamed, then what push sends, until the test ends.
func (s *apiServer) watch(w http.ResponseWriter, r *http.Request, mediaType string, initial bool) {
	events := make(chan watch.Event, 100)
	s.mu.Lock()
	s.watches = append(s.watches, events)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.watches = slices.DeleteFunc(s.watches, func(w chan watch.Event) bool { return w == events })
	}()
	contentType := mediaType
	if mediaType == runtime.ContentTypeProtobuf {
		contentType += ";stream=watch"
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	send := func(e watch.Event) {
		raw := s.encode(mediaType, e.Object)
		if mediaType == runtime.ContentTypeJSON {
			b, _ := json.Marshal(metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}})
			w.Write(append(b, '\n'))
		} else {
			var b bytes.Buffer
			protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme).Encode(&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}, &b)
			protobuf.LengthDelimitedFramer.NewFrameWriter(w).Write(b.Bytes())
		}
		w.(http.Flusher).Flush()
	}
	if initial {
		s.streams.Add(1)
		for _, p := range s.pods {
			send(watch.Event{Type: watch.Added, Object: s.inGroup(p)})
		}
		send(watch.Event{Type: watch.Bookmark, Object: &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: standInVersion, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}})
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			send(e)
		}
	}
}

// inGroup is p as the server sends it in a watch event.
func (s *apiServer) inGroup(p *corev1.Pod) *corev1.Pod {
	c := p.DeepCopy()
	c.APIVersion, c.Kind = s.group.Load().(string), "Pod"
	return c
}

// watching waits until a watch is open, for push to reach it.
func (s *apiServer) watching(t *testing.T) {
	t.Helper()
	eventually(t, "a watch is open", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.watches) > 0
	})
}

// push sends e on every open watch.
func (s *apiServer) push(e watch.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watches {
		select {
		case w <- e:
		default:
		}
	}
}

// expire ends every open watch with 410 Gone, as after an API server restart: the reflector lists again.
func (s *apiServer) expire() {
	gone := apierrors.NewResourceExpired("too old resource version").ErrStatus
	gone.APIVersion, gone.Kind = "v1", "Status"
	s.push(watch.Event{Type: watch.Error, Object: &gone})
}

func (s *apiServer) closeWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watches {
		close(w)
	}
	s.watches = nil
}

// standInPod is Pod i, running at 10.250.0.i.
func standInPod(i int) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("web-%d", i), UID: "uid", ResourceVersion: standInVersion},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.250.0.%d", i),
			PodIPs: []corev1.PodIP{{IP: fmt.Sprintf("10.250.0.%d", i)}}}}
}

// lines is the log, safe to read while the view writes it.
type lines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func captureLog(t *testing.T) *lines {
	var l lines
	golog.SetOutput(&l)
	t.Cleanup(func() { golog.SetOutput(io.Discard) })
	return &l
}

// staleness records the view's changes between fresh and stale.
type staleness struct {
	mu      sync.Mutex
	changes []bool
}

func (s *staleness) record(stale bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = append(s.changes, stale)
}

func (s *staleness) get() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.changes...)
}

// watchStandIn starts a view that reads Pods from s, beside a kubernetes plugin that holds no
// Service, with relists held for hold, and for as long again after the collection.
func watchStandIn(t *testing.T, s *apiServer, hold time.Duration) (*View, *staleness) {
	t.Helper()
	cfg := &rest.Config{Host: s.url}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var st staleness
	v := New(Config{Client: cs, REST: cfg, Clients: true, OnStale: st.record})
	v.relistHold, v.sweepWait = hold, hold
	v.gcCycles = func() uint64 { return uint64(time.Now().UnixNano()) } // a collection always under way
	r := v.Start(newController(t))
	t.Cleanup(r.Stop)
	return v, &st
}

// eventually waits up to 10 s for ok.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
	}
}

// TestPodsInEveryAnswer: whether the API server answers protobuf or, through a proxy, JSON, and
// whether it streams the list or not, the view names the Pods client-go's own decoder reads,
// and stays fresh.
func TestPodsInEveryAnswer(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		jsonOnly, refuseStreams bool
	}{
		{"protobuf, streamed list", false, false},
		{"protobuf, list", false, true},
		{"JSON, streamed list", true, false},
		{"JSON, list", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newAPIServer(t, standInPod(1), standInPod(2))
			s.jsonOnly, s.refuseStreams = tc.jsonOnly, tc.refuseStreams
			v, st := watchStandIn(t, s, 0)
			eventually(t, "the view names Pod web-2 at 10.250.0.2", func() bool {
				return v.Synced() && v.Pod(netip.MustParseAddr("10.250.0.2")) == "team-a/web-2"
			})
			if v.Stale() || len(st.get()) != 0 {
				t.Errorf("stale %v, changes %v; want fresh throughout", v.Stale(), st.get())
			}
			s.watching(t)
			s.push(watch.Event{Type: watch.Added, Object: s.inGroup(standInPod(3))})
			eventually(t, "the view names Pod web-3, added by the watch", func() bool {
				return v.Pod(netip.MustParseAddr("10.250.0.3")) == "team-a/web-3"
			})
		})
	}
}

// TestPodsItCannotRead: a Pod that client-go's decoder would not read (one of a group it does
// not know) names no client, and the view says it cannot read it: stale, and a line that says
// so, until it reads the Pods again.
func TestPodsItCannotRead(t *testing.T) {
	log := captureLog(t)
	s := newAPIServer(t, standInPod(1))
	v, st := watchStandIn(t, s, 0)
	eventually(t, "the view syncs", func() bool { return v.Pod(netip.MustParseAddr("10.250.0.1")) == "team-a/web-1" })

	s.group.Store("example.com/v1")
	s.watching(t)
	s.push(watch.Event{Type: watch.Added, Object: s.inGroup(standInPod(2))})
	eventually(t, "the view is stale", v.Stale)
	if got := v.Pod(netip.MustParseAddr("10.250.0.2")); got != "" {
		t.Errorf("a Pod of group example.com/v1 names the client: %q", got)
	}
	if !strings.Contains(log.String(), "cluster view cannot read the Pods the API server sends") {
		t.Errorf("no line says the view cannot read the Pods:\n%s", log.String())
	}
	s.group.Store("v1")
	s.watching(t)
	s.expire()
	eventually(t, "the view is fresh again once it reads the Pods", func() bool { return !v.Stale() })
	if got := st.get(); len(got) != 2 || !got[0] || got[1] {
		t.Errorf("changes %v, want stale then fresh", got)
	}
}

// TestPodListItCannotRead: a list of Pods that client-go's decoder would not read either (of a
// group it does not know) leaves the view unsynced and stale, and says why.
func TestPodListItCannotRead(t *testing.T) {
	log := captureLog(t)
	s := newAPIServer(t, standInPod(1))
	s.refuseStreams = true
	s.group.Store("example.com/v1")
	v, _ := watchStandIn(t, s, 0)
	eventually(t, "the view is stale", v.Stale)
	if v.Synced() || v.Pod(netip.MustParseAddr("10.250.0.1")) != "" {
		t.Errorf("synced %v on a list it cannot read", v.Synced())
	}
	if !strings.Contains(log.String(), "cluster view cannot read the Pods the API server sends") {
		t.Errorf("no line says the view cannot read the Pods:\n%s", log.String())
	}
}

// TestRefusedStreamedList: an API server that refuses streamed lists (WatchList off) gets a plain
// list at once, first and after each relist: the view never goes stale, says nothing louder
// than one line at info, and waits beside the kubernetes plugin once per relist, not twice.
func TestRefusedStreamedList(t *testing.T) {
	log := captureLog(t)
	s := newAPIServer(t, standInPod(1))
	s.refuseStreams = true
	v, st := watchStandIn(t, s, 50*time.Millisecond)
	eventually(t, "the view syncs", func() bool { return v.Pod(netip.MustParseAddr("10.250.0.1")) == "team-a/web-1" })
	for range 2 {
		lists := s.lists.Load()
		s.watching(t)
		s.expire()
		eventually(t, "the reflector lists again", func() bool { return s.lists.Load() > lists })
	}
	if v.Stale() || len(st.get()) != 0 {
		t.Errorf("stale %v, changes %v; want fresh throughout", v.Stale(), st.get())
	}
	got := log.String()
	if strings.Contains(got, "[WARNING]") {
		t.Errorf("a warning for a refused streamed list:\n%s", got)
	}
	if n := strings.Count(got, "does not stream the list of Pods"); n != 1 {
		t.Errorf("%d lines say the API server does not stream lists, want 1:\n%s", n, got)
	}
	if holds, relists := strings.Count(got, "relisting Pods in"), s.refused.Load()-1; holds != int(relists) {
		t.Errorf("%d waits beside the kubernetes plugin for %d relists:\n%s", holds, relists, got)
	}
}

// TestDecodingFailed: of client-go's own error events, only one for an event it could not
// decode says the view cannot read Pods; a stream that broke, or the API server's 410, does not.
func TestDecodingFailed(t *testing.T) {
	reporter := apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")
	event := func(err error) runtime.Object {
		return reporter.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %w", err))
	}
	gone := apierrors.NewResourceExpired("too old resource version").ErrStatus
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want bool
	}{
		{"object not decoded", event(fmt.Errorf("unable to decode watch event: no kind %q is registered", "Pod")), true},
		{"event type not known", event(fmt.Errorf("got invalid watch event type: %v", "RENAMED")), true},
		{"body closed by Stop", event(fmt.Errorf("http: read on closed response body")), false},
		{"410 from the API server", &gone, false},
	} {
		if got := decodingFailed(tc.obj); got != tc.want {
			t.Errorf("%s: decodingFailed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRefusesStreamedList: 422 (WatchList off) and 400 (a server that does not know the
// parameters) to a streamed list are refusals the reflector answers with a list; any other
// error, or an error to another request, is a failure.
func TestRefusesStreamedList(t *testing.T) {
	streamed := metav1.ListOptions{SendInitialEvents: ptr(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", nil)
	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
		err  error
		want bool
	}{
		{"422", streamed, invalid, true},
		{"400", streamed, apierrors.NewBadRequest("unknown parameter sendInitialEvents"), true},
		{"403", streamed, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil), false},
		{"500", streamed, apierrors.NewInternalError(fmt.Errorf("etcd")), false},
		{"422 to a watch that resumes", metav1.ListOptions{ResourceVersion: "7"}, invalid, false},
		{"answered", streamed, nil, false},
	} {
		if got := refusesStreamedList(tc.opts, tc.err); got != tc.want {
			t.Errorf("%s: refusesStreamedList = %v, want %v", tc.name, got, tc.want)
		}
	}
}
