package leanpod

import (
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The protobuf wire format as the generated code of k8s.io/api reads it (gogo's Unmarshal), not
// as the protobuf specification reads it: a varint takes up to ten bytes whatever their high
// bits, a field number is the low 32 bits of the tag, and a map entry reads its key and value
// whatever their wire type. What the generated code rejects the lean decoder rejects, and what
// it accepts the lean decoder reads to the same values; FuzzAgrees holds the two together.

var (
	errOverflow   = errors.New("proto: integer overflow")
	errLength     = errors.New("proto: negative length found during unmarshaling")
	errEndOfGroup = errors.New("proto: unexpected end of group")
)

// A reader reads the fields of one message, b, from i on.
type reader struct {
	b []byte
	i int
}

// tag is a field's tag, where it starts, and what the message says of its number.
type tag struct {
	num   int32
	wire  int
	start int
	field
}

func (r *reader) more() bool { return r.i < len(r.b) }

func (r *reader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, errOverflow
		}
		if r.i >= len(r.b) {
			return 0, io.ErrUnexpectedEOF
		}
		c := r.b[r.i]
		r.i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// next reads the tag of the next field of message m.
func (r *reader) next(m *message) (tag, error) {
	t := tag{start: r.i}
	w, err := r.varint()
	if err != nil {
		return t, err
	}
	t.num, t.wire = int32(w>>3), int(w&7)
	if t.wire == 4 || t.num <= 0 {
		return t, badTag(m, t, w)
	}
	t.field = m.field(t.num)
	return t, nil
}

func badTag(m *message, t tag, w uint64) error {
	if t.wire == 4 {
		return fmt.Errorf("proto: %s: wiretype end group for non-group", m.name)
	}
	return fmt.Errorf("proto: %s: illegal tag %d (wire type %d)", m.name, t.num, w)
}

// end reads a length and returns where the value it measures ends.
func (r *reader) end() (int, error) {
	n, err := r.varint()
	if err != nil {
		return 0, err
	}
	l := int(n)
	if l < 0 {
		return 0, errLength
	}
	end := r.i + l
	if end < 0 {
		return 0, errLength
	}
	if end > len(r.b) {
		return 0, io.ErrUnexpectedEOF
	}
	return end, nil
}

// bytes reads the value of a length-delimited field.
func (r *reader) bytes(t tag) ([]byte, error) {
	if t.wire != 2 {
		return nil, wrongWire(t)
	}
	end, err := r.end()
	if err != nil {
		return nil, err
	}
	v := r.b[r.i:end]
	r.i = end
	return v, nil
}

// scalar reads the value of a varint field.
func (r *reader) scalar(t tag) (uint64, error) {
	if t.wire != 0 {
		return 0, wrongWire(t)
	}
	return r.varint()
}

func wrongWire(t tag) error {
	return fmt.Errorf("proto: wrong wireType = %d for field %d", t.wire, t.num)
}

// check reads the value of field t as the generated code does, and keeps nothing of it.
func (r *reader) check(t tag) error {
	switch t.kind {
	case skipped:
		return r.skip(t.start, len(r.b))
	case integer:
		_, err := r.scalar(t)
		return err
	case integers:
		if t.wire == 0 {
			_, err := r.varint()
			return err
		}
		if t.wire != 2 {
			return wrongWire(t)
		}
		end, err := r.end()
		if err != nil {
			return err
		}
		for r.i < end { // the last varint may run past end, as the generated code reads it
			if _, err := r.varint(); err != nil {
				return err
			}
		}
		return nil
	case delimited:
		_, err := r.bytes(t)
		return err
	case submessage:
		v, err := r.bytes(t)
		if err != nil {
			return err
		}
		return check(v, t.msg)
	case mapEntry:
		_, _, err := r.entry(t)
		return err
	case quantityString:
		v, err := r.bytes(t)
		if err != nil {
			return err
		}
		_, err = resource.ParseQuantity(string(v))
		return err
	}
	panic("leanpod: field kind " + fmt.Sprint(t.kind))
}

// check reads message b as the generated code of m does, and keeps nothing. Most fields are
// integers, strings and messages with a tag of one byte: those are read here, the rest by
// reader.check.
func check(b []byte, m *message) error {
	r := reader{b: b}
	for r.i < len(b) {
		if c := b[r.i]; c < 0x80 && c&7 != 4 && c>>3 != 0 && int(c>>3) < len(m.fields) {
			f := m.fields[c>>3]
			switch {
			case f.kind == integer && c&7 == 0:
				r.i++
				if _, err := r.varint(); err != nil {
					return err
				}
				continue
			case (f.kind == delimited || f.kind == submessage) && c&7 == 2:
				r.i++
				end, err := r.end()
				if err != nil {
					return err
				}
				if f.kind == submessage {
					if err := check(b[r.i:end], f.msg); err != nil {
						return err
					}
				}
				r.i = end
				continue
			}
		}
		t, err := r.next(m)
		if err != nil {
			return err
		}
		if err := r.check(t); err != nil {
			return err
		}
	}
	return nil
}

// entry reads a map entry and returns its last key and, for a string value, its last value. As
// in the generated code, the key and value are read as lengths whatever their wire type, within
// the message rather than the entry, and what follows the entry's end is not read again.
func (r *reader) entry(t tag) (key, value []byte, err error) {
	if t.wire != 2 {
		return nil, nil, wrongWire(t)
	}
	end, err := r.end()
	if err != nil {
		return nil, nil, err
	}
	for r.i < end {
		start := r.i
		w, err := r.varint()
		if err != nil {
			return nil, nil, err
		}
		switch int32(w >> 3) {
		case 1, 2:
			e, err := r.end()
			if err != nil {
				return nil, nil, err
			}
			v := r.b[r.i:e]
			r.i = e
			switch {
			case int32(w>>3) == 1:
				key = v
			case t.msg == nil:
				value = v
			default:
				if err := check(v, t.msg); err != nil {
					return nil, nil, err
				}
			}
		default:
			if err := r.skip(start, end); err != nil {
				return nil, nil, err
			}
		}
	}
	r.i = end
	return key, value, nil
}

// skip steps over the field that starts at start, which must end by limit.
func (r *reader) skip(start, limit int) error {
	n, err := skipField(r.b[start:])
	if err != nil {
		return err
	}
	if n < 0 || start+n < 0 {
		return errLength
	}
	if start+n > limit {
		return io.ErrUnexpectedEOF
	}
	r.i = start + n
	return nil
}

// skipField returns the length of the field b starts with, groups and all. Like the generated
// code's skipGenerated, it may return a length past the end of b, for its caller to refuse.
func skipField(b []byte) (int, error) {
	r := reader{b: b}
	depth := 0
	for r.more() {
		w, err := r.varint()
		if err != nil {
			return 0, err
		}
		switch w & 7 {
		case 0:
			if _, err := r.varint(); err != nil {
				return 0, err
			}
		case 1:
			r.i += 8
		case 2:
			n, err := r.varint()
			if err != nil {
				return 0, err
			}
			if int(n) < 0 {
				return 0, errLength
			}
			r.i += int(n)
		case 3:
			depth++
		case 4:
			if depth == 0 {
				return 0, errEndOfGroup
			}
			depth--
		case 5:
			r.i += 4
		default:
			return 0, fmt.Errorf("proto: illegal wireType %d", w&7)
		}
		if r.i < 0 {
			return 0, errLength
		}
		if depth == 0 {
			return r.i, nil
		}
	}
	return 0, io.ErrUnexpectedEOF
}
