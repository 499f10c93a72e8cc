package webhook

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// FuzzReview posts any body to the handler, over the incident's cluster, with --deny off
// and on. It must answer, never panic: a 200 is an AdmissionReview for the request's uid
// whose warnings the API server takes (valid UTF-8 without control characters, at most
// maxWarningRunes); anything else is a 4xx, which failurePolicy Ignore lets through. The
// seed corpus is testdata/fuzz/FuzzReview.
func FuzzReview(f *testing.F) {
	f.Add([]byte(reviewOf("CREATE", "namespaces", "", "my-app", namespaceJSON("my-app"))))
	f.Add([]byte(reviewOf("CREATE", "services", "team-a", "my-app", serviceJSON("team-a", "my-app", `{"type":"ExternalName","externalName":"my-app.svc.cluster.local"}`))))
	f.Add([]byte(reviewOf("DELETE", "services", "new-namespace-1", "web", `null`)))
	x := cluster("my-app", "new-namespace-1/web", "new-namespace-2/my-app", "web")
	handlers := []*Handler{
		{View: x, Policy: Policy{Zone: "cluster.local"}},
		{View: x, Policy: Policy{Zone: "cluster.local", Deny: true, Allow: map[string]bool{"web": true}}},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, h := range handlers {
			req := httptest.NewRequest(http.MethodPost, "/validate", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				if rec.Code < 400 || rec.Code > 499 {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				continue
			}
			var in, out admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
				t.Fatalf("answered 200 to what is no review (%v): %s", err, body)
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("a 200 that is no review (%v): %s", err, rec.Body)
			}
			if out.Response.UID != in.Request.UID {
				t.Fatalf("uid %q, want %q", out.Response.UID, in.Request.UID)
			}
			if !out.Response.Allowed && (!h.Policy.Deny || out.Response.Result == nil || out.Response.Result.Message == "") {
				t.Fatalf("refused without --deny or without a reason: %s", rec.Body)
			}
			for _, w := range out.Response.Warnings {
				if _, err := utilnet.NewWarningHeader(299, "", w); err != nil || utf8.RuneCountInString(w) > maxWarningRunes {
					t.Fatalf("warning the API server would drop or cut (%v): %q", err, w)
				}
			}
		}
	})
}
