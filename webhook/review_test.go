package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// reviewOf is an AdmissionReview as kube-apiserver sends it, for an operation on an object
// of resource in namespace ns; obj is the object's JSON (the old object for a DELETE).
func reviewOf(op, resource, ns, name, obj string) string {
	kind := map[string]string{"namespaces": "Namespace", "services": "Service", "configmaps": "ConfigMap"}[resource]
	field := "object"
	if op == "DELETE" {
		field = "oldObject"
	}
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{` +
		`"uid":"705ab4f5-6393-11e8-b7cc-42010a800002",` +
		`"kind":{"group":"","version":"v1","kind":"` + kind + `"},` +
		`"resource":{"group":"","version":"v1","resource":"` + resource + `"},` +
		`"requestKind":{"group":"","version":"v1","kind":"` + kind + `"},` +
		`"requestResource":{"group":"","version":"v1","resource":"` + resource + `"},` +
		`"name":"` + name + `","namespace":"` + ns + `","operation":"` + op + `",` +
		`"userInfo":{"username":"admin","groups":["system:masters","system:authenticated"]},` +
		`"` + field + `":` + obj + `,"dryRun":false,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}`
}

func namespaceJSON(name string) string {
	return `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"},"spec":{},"status":{"phase":"Active"}}`
}

func serviceJSON(ns, name, spec string) string {
	return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":` + spec + `}`
}

// post sends body to the handler as kube-apiserver does, and decodes a 200's review.
func post(t *testing.T, h http.Handler, body string) (int, *admissionv1.AdmissionResponse, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/validate?timeout=2s", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return rec.Code, nil, rec.Body.String()
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("response is no AdmissionReview: %v\n%s", err, rec.Body)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("response %s", rec.Body)
	}
	if rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type %q", rec.Header().Get("Content-Type"))
	}
	return rec.Code, out.Response, rec.Body.String()
}

func TestReview(t *testing.T) {
	x := cluster("my-app", "new-namespace-1/my-app", "new-namespace-2/my-app", "team-b/api")
	h := &Handler{View: x, Policy: Policy{Zone: "cluster.local"}}
	tests := []struct {
		name     string
		body     string
		warnings int
	}{
		{"namespace capture", reviewOf("CREATE", "namespaces", "", "api", namespaceJSON("api")), 1},
		{"clean namespace", reviewOf("CREATE", "namespaces", "", "team-c", namespaceJSON("team-c")), 0},
		{"Service captured", reviewOf("CREATE", "services", "team-a", "my-app", serviceJSON("team-a", "my-app", `{"ports":[{"port":80}]}`)), 1},
		{"alias to an apex", reviewOf("CREATE", "services", "team-a", "x", serviceJSON("team-a", "x", `{"type":"ExternalName","externalName":"my-app.svc.cluster.local"}`)), 1},
		{"Service deleted", reviewOf("DELETE", "services", "new-namespace-1", "my-app", serviceJSON("new-namespace-1", "my-app", `{}`)), 1},
		{"DELETE without the old object", reviewOf("DELETE", "services", "new-namespace-1", "my-app", `null`), 1},
		{"generated name: not known yet", reviewOf("CREATE", "services", "team-a", "", `{"apiVersion":"v1","kind":"Service","metadata":{"generateName":"my-app","namespace":"team-a"},"spec":{}}`), 0},
		{"name from the object", reviewOf("CREATE", "services", "team-a", "", serviceJSON("team-a", "my-app", `{}`)), 1},
		{"another resource", reviewOf("CREATE", "configmaps", "team-a", "my-app", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"my-app"}}`), 0},
		{"an UPDATE", reviewOf("UPDATE", "services", "new-namespace-2", "my-app", serviceJSON("new-namespace-2", "my-app", `{}`)), 0},
		{"a name that is no DNS label", reviewOf("CREATE", "namespaces", "", "My_App", namespaceJSON("My_App")), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, res, body := post(t, h, tt.body)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			if res.UID != "705ab4f5-6393-11e8-b7cc-42010a800002" || !res.Allowed || res.Result != nil {
				t.Errorf("response %s", body)
			}
			if len(res.Warnings) != tt.warnings {
				t.Errorf("warnings %q, want %d", res.Warnings, tt.warnings)
			}
		})
	}
	code, res, _ := post(t, h, reviewOf("CREATE", "namespaces", "", "svc", namespaceJSON("svc")))
	if code != http.StatusOK || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "named like a label of the DNS schema") {
		t.Errorf("namespace svc: %d %+v", code, res)
	}
}

func TestReviewDeny(t *testing.T) {
	x := cluster("my-app", "new-namespace-1")
	h := &Handler{View: x, Policy: Policy{Zone: "cluster.local", Deny: true}}
	_, res, body := post(t, h, reviewOf("CREATE", "services", "new-namespace-2", "my-app", serviceJSON("new-namespace-2", "my-app", `{}`)))
	if res.Allowed || res.Result == nil || res.Result.Code != http.StatusForbidden || res.Result.Reason != "Forbidden" ||
		!strings.HasPrefix(res.Result.Message, "nsguard: namespace my-app captures the short name of Service my-app in new-namespace-2") {
		t.Errorf("not denied as forbidden: %s", body)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("a denial with warnings %q: kubectl would print the finding twice", res.Warnings)
	}
	_, res, body = post(t, h, reviewOf("CREATE", "services", "new-namespace-2", "web", serviceJSON("new-namespace-2", "web", `{}`)))
	if !res.Allowed || res.Result != nil {
		t.Errorf("a clean Service refused: %s", body)
	}
}

// Until its informers synced, the webhook knows nothing: it lets everything through, quietly.
func TestReviewNotSynced(t *testing.T) {
	x := cluster("my-app")
	x.synced = func() bool { return false }
	h := &Handler{View: x, Policy: Policy{Zone: "cluster.local", Deny: true}}
	_, res, body := post(t, h, reviewOf("CREATE", "services", "team-a", "my-app", serviceJSON("team-a", "my-app", `{}`)))
	if !res.Allowed || len(res.Warnings) != 0 {
		t.Errorf("before sync: %s", body)
	}
}

// What is not an admission review gets an HTTP error, which the API server counts as the
// webhook failing: with failurePolicy Ignore, the change goes through.
func TestReviewBadRequests(t *testing.T) {
	h := &Handler{View: cluster(), Policy: Policy{Zone: "cluster.local"}}
	tests := []struct {
		name, method, contentType, body string
		code                            int
	}{
		{"GET", http.MethodGet, "application/json", "", http.StatusMethodNotAllowed},
		{"YAML", http.MethodPost, "application/yaml", "apiVersion: v1", http.StatusUnsupportedMediaType},
		{"not JSON", http.MethodPost, "application/json", "garbage", http.StatusBadRequest},
		{"empty", http.MethodPost, "application/json", "", http.StatusBadRequest},
		{"no request", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
		{"v1beta1", http.MethodPost, "application/json", strings.Replace(reviewOf("CREATE", "namespaces", "", "a", namespaceJSON("a")), "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1), http.StatusBadRequest},
		{"another kind", http.MethodPost, "application/json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`, http.StatusBadRequest},
		{"no uid", http.MethodPost, "application/json", strings.Replace(reviewOf("CREATE", "namespaces", "", "a", namespaceJSON("a")), `"uid":"705ab4f5-6393-11e8-b7cc-42010a800002",`, "", 1), http.StatusBadRequest},
		{"object not an object", http.MethodPost, "application/json", reviewOf("CREATE", "namespaces", "", "", `"a"`), http.StatusBadRequest},
		{"too large", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","object":{"metadata":{"annotations":{"a":"` + strings.Repeat("x", maxReviewBytes) + `"}}}}}`, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/validate", bytes.NewReader([]byte(tt.body)))
			req.Header.Set("Content-Type", tt.contentType)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
		})
	}
}
