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
	for r.more() {
		t, err := r.next(podSchema)
		if err != nil {
			return err
		}
		switch t.num {
		case podMetadata:
			err = r.with(t, p.meta)
		case podSpec:
			err = r.with(t, p.spec)
		case podStatus:
			err = r.with(t, p.status)
		default:
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
	for r.more() {
		t, err := r.next(m)
		if err != nil {
			return err
		}
		var v []byte
		switch t.num {
		case metaName, metaNamespace, metaUID, metaVersion:
			v, err = r.bytes(t)
			if err == nil {
				setMeta(&p.ObjectMeta, t.num, string(v))
			}
		case metaAnnotations:
			var key, value []byte
			key, value, err = r.entry(t)
			if err == nil && string(key) == metav1.InitialEventsAnnotationKey {
				p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: string(value)}
			}
		default:
			err = r.check(t)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
	for r.more() {
		t, err := r.next(m)
		if err != nil {
			return err
		}
		if t.num == specHostNetwork {
			var v uint64
			v, err = r.scalar(t)
			p.HostNetwork = v != 0
		} else {
			err = r.check(t)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *Pod) status(m *message, b []byte) error {
	r := reader{b: b}
	for r.more() {
		t, err := r.next(m)
		if err != nil {
			return err
		}
		var v []byte
		switch t.num {
		case statusPhase, statusPodIP:
			if v, err = r.bytes(t); err == nil && t.num == statusPhase {
				p.Phase = phase(v)
			} else if err == nil {
				p.PodIP = string(v)
			}
		case statusPodIPs:
			if v, err = r.bytes(t); err == nil {
				err = p.podIP(t.msg, v)
			}
		default:
			err = r.check(t)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// podIP reads one element of status.podIPs: a Pod without an ip field still adds one, empty.
func (p *Pod) podIP(m *message, b []byte) error {
	var ip []byte
	r := reader{b: b}
	for r.more() {
		t, err := r.next(m)
		if err != nil {
			return err
		}
		if t.num == podIPsIP {
			ip, err = r.bytes(t)
		} else {
			err = r.check(t)
		}
		if err != nil {
			return err
		}
	}
	p.PodIPs = append(p.PodIPs, string(ip))
	return nil
}

// Unmarshal reads a PodList in protobuf, as corev1.PodList's Unmarshal does, into l.
func (l *PodList) Unmarshal(b []byte) error {
	r := reader{b: b}
	for r.more() {
		t, err := r.next(podListSchema)
		if err != nil {
			return err
		}
		var v []byte
		switch t.num {
		case listMetadata:
			err = r.with(t, l.meta)
		case listItems:
			if v, err = r.bytes(t); err == nil {
				l.Items = append(l.Items, Pod{})
				err = l.Items[len(l.Items)-1].Unmarshal(v)
			}
		default:
			err = r.check(t)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *PodList) meta(m *message, b []byte) error {
	r := reader{b: b}
	for r.more() {
		t, err := r.next(m)
		if err != nil {
			return err
		}
		switch t.num {
		case listVersion, listContinue:
			var v []byte
			if v, err = r.bytes(t); err == nil && t.num == listVersion {
				l.ResourceVersion = string(v)
			} else if err == nil {
				l.Continue = string(v)
			}
		case listRemaining:
			var v uint64
			if v, err = r.scalar(t); err == nil {
				n := int64(v)
				l.RemainingItemCount = &n
			}
		default:
			err = r.check(t)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
