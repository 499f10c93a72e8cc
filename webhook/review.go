package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/klog/v2"

	"github.com/nsguard/nsguard/clusterdns"
)

// maxReviewBytes bounds a review's body. kube-apiserver takes objects of up to 3 MiB; a
// Namespace or Service and its old copy are far smaller, unless their annotations fill the
// 256 KiB they may.
const maxReviewBytes = 1 << 20

// reviewJSON reads and writes AdmissionReviews as JSON, which the API server sends; not
// strictly, so that a field a later API server adds does not fail the review.
var reviewJSON = func() runtime.Serializer {
	scheme := runtime.NewScheme()
	if err := admissionv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	info, _ := runtime.SerializerInfoForMediaType(serializer.NewCodecFactory(scheme).SupportedMediaTypes(), runtime.ContentTypeJSON)
	return info.Serializer
}()

// Reader is what the handler reads: the view of the cluster, and whether it has synced.
type Reader interface {
	View
	Synced() bool
}

// Handler answers kube-apiserver's AdmissionReviews (admission.k8s.io/v1) from View alone.
type Handler struct {
	View   Reader
	Policy Policy
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "an AdmissionReview is POSTed", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "want Content-Type application/json", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("review larger than %d bytes", maxReviewBytes), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, "reading the review: "+err.Error(), http.StatusBadRequest)
		return
	}
	req, err := decodeReview(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ch, known, err := changeOf(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if known && h.View.Synced() {
		v := h.Policy.Decide(h.View, ch)
		if v.Deny {
			res.Allowed = false
			res.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: v.Message}
		} else {
			res.Warnings = v.Warnings
		}
		for _, f := range v.Findings {
			klog.InfoS("Told of a finding", "decision", map[bool]string{true: "denied", false: "warned"}[v.Deny],
				"operation", ch.Operation, "kind", ch.Kind, "namespace", ch.Namespace, "name", ch.Name,
				"user", req.UserInfo.Username, "dryRun", req.DryRun != nil && *req.DryRun,
				"check", f.Check, "severity", f.Severity, "message", f.Message)
		}
	}
	review := &admissionv1.AdmissionReview{Response: res}
	review.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"))
	out, err := runtime.Encode(reviewJSON, review)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// decodeReview reads an admission.k8s.io/v1 AdmissionReview with its request.
func decodeReview(body []byte) (*admissionv1.AdmissionRequest, error) {
	want := admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	obj, gvk, err := reviewJSON.Decode(body, &want, nil)
	if err != nil {
		return nil, fmt.Errorf("not an AdmissionReview: %w", err)
	}
	review, ok := obj.(*admissionv1.AdmissionReview)
	if !ok || *gvk != want {
		return nil, fmt.Errorf("not an %s AdmissionReview: %s", admissionv1.SchemeGroupVersion, gvk)
	}
	if review.Request == nil || review.Request.UID == "" {
		return nil, errors.New("AdmissionReview without a request and its uid")
	}
	return review.Request, nil
}

// object is what the webhook reads of the object under admission.
type object struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Type         string `json:"type"`
		ExternalName string `json:"externalName"`
	} `json:"spec"`
}

// changeOf reads the change a request makes. known is false for one the webhook has nothing
// to say about: another resource or operation (matchConditions keep them away), or a name
// the API server generates after admission.
func changeOf(req *admissionv1.AdmissionRequest) (ch Change, known bool, err error) {
	var o object
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &o); err != nil {
			return ch, false, fmt.Errorf("the request's object: %w", err)
		}
	}
	ch = Change{Operation: Operation(req.Operation), Namespace: req.Namespace, Name: req.Name}
	if ch.Name == "" && req.Operation == admissionv1.Create {
		ch.Name = o.Metadata.Name
	}
	r := req.Resource
	switch {
	case r.Group != "" || r.Version != "v1" || req.SubResource != "":
		return ch, false, nil
	case r.Resource == "namespaces" && ch.Operation == Create:
		ch.Kind, ch.Namespace = "Namespace", ""
	case r.Resource == "services" && (ch.Operation == Create || ch.Operation == Delete):
		ch.Kind = "Service"
		if o.Spec.Type == "ExternalName" {
			ch.ExternalName = o.Spec.ExternalName
		}
	default:
		return ch, false, nil
	}
	// Names the API server would refuse, or not yet generated: nothing to check.
	if !clusterdns.IsDNSLabel(ch.Name) || ch.Kind == "Service" && !clusterdns.IsDNSLabel(ch.Namespace) {
		return ch, false, nil
	}
	return ch, true, nil
}
