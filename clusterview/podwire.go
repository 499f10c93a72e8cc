package clusterview

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// podWire is a Pod as the view reads it off the wire: what it keeps, and the metadata the
// reflector needs (the resource version, and the annotation that ends a streamed list).
// Decoding a 9 KB Pod into a corev1.Pod allocates tens of kilobytes that are garbage at
// once; across 50,000 Pods that garbage is what fills CoreDNS's heap to its GC goal.
type podWire struct {
	metav1.TypeMeta
	metav1.ObjectMeta // Name, Namespace, UID, ResourceVersion, and only that annotation

	hostNetwork bool
	phase       corev1.PodPhase
	podIP       string
	podIPs      []string
}

func (p *podWire) DeepCopyObject() runtime.Object {
	c := *p
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.podIPs = slices.Clone(p.podIPs)
	return &c
}

// podWireList is a PodList of podWire, for the reflector's plain LIST.
type podWireList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []podWire
}

func (l *podWireList) DeepCopyObject() runtime.Object {
	c := &podWireList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	for i := range l.Items {
		c.Items = append(c.Items, *l.Items[i].DeepCopyObject().(*podWire))
	}
	return c
}

// protobufMagic starts every object the API server encodes in protobuf (runtime.Unknown).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// podDecoder decodes Pods and PodLists in protobuf into podWire; anything else (a Status,
// JSON) goes to next, the client's own decoder.
type podDecoder struct{ next runtime.Decoder }

func (d podDecoder) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	kind, raw, ok := unknown(data)
	if !ok {
		return d.next.Decode(data, gvk, into)
	}
	switch string(kind) { // compared without a copy
	case "Pod":
		p, _ := into.(*podWire)
		if p == nil {
			p = &podWire{}
		}
		*p = podWire{}
		return p, &schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, decodePod(raw, p)
	case "PodList":
		l, _ := into.(*podWireList)
		if l == nil {
			l = &podWireList{}
		}
		*l = podWireList{}
		return l, &schema.GroupVersionKind{Version: "v1", Kind: "PodList"}, decodePodList(raw, l)
	}
	return d.next.Decode(data, gvk, into)
}

// unknown reads the envelope of a protobuf object: its kind and its bytes.
func unknown(data []byte) (kind, raw []byte, ok bool) {
	if !bytes.HasPrefix(data, protobufMagic) {
		return nil, nil, false
	}
	var typeMeta []byte
	err := fields(data[len(protobufMagic):], func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			typeMeta = v
		case 2:
			raw = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, false
	}
	err = fields(typeMeta, func(num protowire.Number, v []byte) error {
		if num == 2 {
			kind = v
		}
		return nil
	})
	return kind, raw, err == nil
}

func decodePodList(b []byte, l *podWireList) error {
	return fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return fields(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 2:
					l.ResourceVersion = string(v)
				case 3:
					l.Continue = string(v)
				}
				return nil
			})
		case 2:
			l.Items = append(l.Items, podWire{})
			return decodePod(v, &l.Items[len(l.Items)-1])
		}
		return nil
	})
}

func decodePod(b []byte, p *podWire) error {
	p.Kind, p.APIVersion = "Pod", "v1"
	return fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return decodeMeta(v, &p.ObjectMeta)
		case 2:
			return scalars(v, func(num protowire.Number, x uint64) {
				if num == 11 {
					p.hostNetwork = x != 0
				}
			})
		case 3:
			return fields(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					p.phase = corev1.PodPhase(v)
				case 6:
					p.podIP = string(v)
				case 12:
					return fields(v, func(num protowire.Number, v []byte) error {
						if num == 1 {
							p.podIPs = append(p.podIPs, string(v))
						}
						return nil
					})
				}
				return nil
			})
		}
		return nil
	})
}

func decodeMeta(b []byte, m *metav1.ObjectMeta) error {
	return fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			m.Name = string(v)
		case 3:
			m.Namespace = string(v)
		case 5:
			m.UID = types.UID(v)
		case 6:
			m.ResourceVersion = string(v)
		case 12: // an annotation: only the one that ends a streamed list is kept
			var key, value []byte
			err := fields(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					key = v
				case 2:
					value = v
				}
				return nil
			})
			if err == nil && string(key) == metav1.InitialEventsAnnotationKey {
				m.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: string(value)}
			}
			return err
		}
		return nil
	})
}

var errWire = errors.New("malformed protobuf")

// fields calls f with the number and bytes of each length-delimited field of message b,
// and skips the others.
func fields(b []byte, f func(num protowire.Number, v []byte) error) error { return walk(b, f, nil) }

// scalars calls f with the number and value of each varint field of message b.
func scalars(b []byte, f func(num protowire.Number, v uint64)) error { return walk(b, nil, f) }

// walk calls onBytes for each length-delimited field of b and onVarint for each varint
// field, where not nil, and skips every other field.
func walk(b []byte, onBytes func(protowire.Number, []byte) error, onVarint func(protowire.Number, uint64)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", errWire, protowire.ParseError(n))
		}
		b = b[n:]
		var err error
		switch {
		case typ == protowire.BytesType && onBytes != nil:
			var v []byte
			if v, n = protowire.ConsumeBytes(b); n >= 0 {
				err = onBytes(num, v)
			}
		case typ == protowire.VarintType && onVarint != nil:
			var v uint64
			if v, n = protowire.ConsumeVarint(b); n >= 0 {
				onVarint(num, v)
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", errWire, num, protowire.ParseError(n))
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
