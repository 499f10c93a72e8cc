package leanpod

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Field numbers of what a lean Pod keeps (k8s.io/api/core/v1/generated.proto).
const (
	podMetadata, podSpec, podStatus                  = 1, 2, 3
	metaName, metaNamespace, metaUID, metaVersion    = 1, 3, 5, 6
	metaAnnotations                                  = 12
	specHostNetwork                                  = 11
	statusPhase, statusPodIP, statusPodIPs, podIPsIP = 1, 6, 12, 1
	listMetadata, listItems                          = 1, 2
	listVersion, listContinue, listRemaining         = 2, 3, 4
)

// Unmarshal reads a Pod in protobuf, as corev1.Pod's Unmarshal does, into p. A field given
// twice is read as the generated code reads it: the last value of a scalar, every element of a
// list, and a message merged into the one before.
func (p *Pod) Unmarshal(b []byte) error {
	r := reader{b: b}
	return r.fields(podSchema, func(t tag) (bool, error) {
		switch t.num {
		case podMetadata:
			return true, r.with(t, p.meta)
		case podSpec:
			return true, r.with(t, p.spec)
		case podStatus:
			return true, r.with(t, p.status)
		}
		return false, nil
	})
}

// fields reads the fields of message m that follow: keep reads those it keeps, and says which;
// every other field is checked. (keep reads with r itself: a reader handed to it would be
// allocated.)
func (r *reader) fields(m *message, keep func(t tag) (kept bool, err error)) error {
	for r.more() {
		t, err := r.next(m)
		if err != nil {
			return err
		}
		kept, err := keep(t)
		if err == nil && !kept {
			err = r.check(t)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// with reads the message of field t and hands it to read.
func (r *reader) with(t tag, read func(*message, []byte) error) error {
	v, err := r.bytes(t)
	if err != nil {
		return err
	}
	return read(t.msg, v)
}

func (p *Pod) meta(m *message, b []byte) error {
	r := reader{b: b}
	return r.fields(m, func(t tag) (bool, error) {
		switch t.num {
		case metaName, metaNamespace, metaUID, metaVersion:
			v, err := r.bytes(t)
			if err == nil {
				setMeta(&p.ObjectMeta, t.num, string(v))
			}
			return true, err
		case metaAnnotations:
			key, value, err := r.entry(t)
			if err == nil && string(key) == metav1.InitialEventsAnnotationKey {
				p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: string(value)}
			}
			return true, err
		}
		return false, nil
	})
}

func setMeta(m *metav1.ObjectMeta, num int32, s string) {
	switch num {
	case metaName:
		m.Name = s
	case metaNamespace:
		m.Namespace = s
	case metaUID:
		m.UID = types.UID(s)
	case metaVersion:
		m.ResourceVersion = s
	}
}

func (p *Pod) spec(m *message, b []byte) error {
	r := reader{b: b}
	return r.fields(m, func(t tag) (bool, error) {
		if t.num != specHostNetwork {
			return false, nil
		}
		v, err := r.scalar(t)
		p.HostNetwork = v != 0
		return true, err
	})
}

func (p *Pod) status(m *message, b []byte) error {
	r := reader{b: b}
	return r.fields(m, func(t tag) (bool, error) {
		switch t.num {
		case statusPhase:
			v, err := r.bytes(t)
			if err == nil {
				p.Phase = phase(v)
			}
			return true, err
		case statusPodIP:
			v, err := r.bytes(t)
			if err == nil {
				p.PodIP = string(v)
			}
			return true, err
		case statusPodIPs:
			return true, r.with(t, p.podIP)
		}
		return false, nil
	})
}

// podIP reads one element of status.podIPs: one without an ip field still adds one, empty.
func (p *Pod) podIP(m *message, b []byte) error {
	var ip []byte
	r := reader{b: b}
	err := r.fields(m, func(t tag) (bool, error) {
		if t.num != podIPsIP {
			return false, nil
		}
		var err error
		ip, err = r.bytes(t)
		return true, err
	})
	if err == nil {
		p.PodIPs = append(p.PodIPs, string(ip))
	}
	return err
}

// Unmarshal reads a PodList in protobuf, as corev1.PodList's Unmarshal does, into l.
func (l *PodList) Unmarshal(b []byte) error {
	r := reader{b: b}
	return r.fields(podListSchema, func(t tag) (bool, error) {
		switch t.num {
		case listMetadata:
			return true, r.with(t, l.meta)
		case listItems:
			v, err := r.bytes(t)
			if err == nil {
				l.Items = append(l.Items, Pod{})
				err = l.Items[len(l.Items)-1].Unmarshal(v)
			}
			return true, err
		}
		return false, nil
	})
}

func (l *PodList) meta(m *message, b []byte) error {
	r := reader{b: b}
	return r.fields(m, func(t tag) (bool, error) {
		switch t.num {
		case listVersion:
			v, err := r.bytes(t)
			if err == nil {
				l.ResourceVersion = string(v)
			}
			return true, err
		case listContinue:
			v, err := r.bytes(t)
			if err == nil {
				l.Continue = string(v)
			}
			return true, err
		case listRemaining:
			v, err := r.scalar(t)
			if err == nil {
				n := int64(v)
				l.RemainingItemCount = &n
			}
			return true, err
		}
		return false, nil
	})
}

// phase returns the phases the API defines without allocating.
func phase(v []byte) corev1.PodPhase {
	for _, p := range []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
		if string(v) == string(p) {
			return p
		}
	}
	return corev1.PodPhase(v)
}
