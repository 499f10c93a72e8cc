package leanpod

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A message is what the generated Unmarshal of one k8s.io/api type accepts: for each field
// number, how its value is read. The lean decoder checks every field it does not keep against
// it, so that it rejects exactly what client-go's full decoder rejects. It is read off the Go
// types the generated code was made from: field numbers from their protobuf tags, wire types
// from their Go types (a tag's wire type is not always right: ListMeta's remainingItemCount
// says bytes and is a varint).
type message struct {
	name   string
	fields []field // by number; the zero field is one the generated code skips
}

type kind uint8

const (
	skipped        kind = iota // not in the message: any well-formed field
	integer                    // bool and integers
	integers                   // repeated integers, packed or not
	delimited                  // strings and bytes
	submessage                 // a message, once or repeated
	mapEntry                   // a map entry: key and value read whatever their wire type
	quantityString             // resource.Quantity's string: it must parse
)

type field struct {
	kind kind
	msg  *message // a submessage's, and a mapEntry's with a message value
}

func (m *message) field(num int32) field {
	if int(num) < len(m.fields) {
		return m.fields[num]
	}
	return field{}
}

var (
	known         schemas
	podSchema     = known.of(reflect.TypeFor[corev1.Pod]())
	podListSchema = known.of(reflect.TypeFor[corev1.PodList]())
)

// schemas are the messages made so far, by Go type: a type held in many places is one message.
type schemas map[reflect.Type]*message

var (
	quantityType  = reflect.TypeFor[resource.Quantity]()
	timestampType = reflect.TypeFor[metav1.Timestamp]()
	// Time and MicroTime unmarshal a Timestamp.
	timeTypes = map[reflect.Type]bool{reflect.TypeFor[metav1.Time](): true, reflect.TypeFor[metav1.MicroTime](): true}
)

// of returns the message of struct type t, and makes those of every type it holds.
func (s *schemas) of(t reflect.Type) *message {
	if *s == nil {
		*s = schemas{}
	}
	if timeTypes[t] {
		t = timestampType
	}
	if m, ok := (*s)[t]; ok {
		return m
	}
	m := &message{name: t.String()}
	(*s)[t] = m
	if t == quantityType { // its Unmarshal is written by hand: one string, parsed
		m.fields = []field{1: {kind: quantityString}}
		return m
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("protobuf")
		if tag == "" || tag == "-" {
			continue
		}
		num, err := strconv.Atoi(strings.Split(tag, ",")[1])
		if err != nil || num <= 0 {
			panic(fmt.Sprintf("leanpod: %s.%s: protobuf tag %q", t, sf.Name, tag))
		}
		if num >= len(m.fields) {
			m.fields = append(m.fields, make([]field, num+1-len(m.fields))...)
		}
		m.fields[num] = s.fieldOf(t, sf)
	}
	if len(m.fields) == 0 {
		panic(fmt.Sprintf("leanpod: %s has no protobuf fields: a type with an Unmarshal of its own needs a schema here", t))
	}
	return m
}

func (s *schemas) fieldOf(t reflect.Type, sf reflect.StructField) field {
	ft := sf.Type
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	switch {
	case ft.Kind() == reflect.Map:
		f := field{kind: mapEntry}
		if v := deref(ft.Elem()); v.Kind() == reflect.Struct {
			f.msg = s.of(v)
		}
		return f
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8:
		switch e := deref(ft.Elem()); {
		case isInteger(e):
			return field{kind: integers}
		case e.Kind() == reflect.String || e.Kind() == reflect.Slice && e.Elem().Kind() == reflect.Uint8:
			return field{kind: delimited}
		case e.Kind() == reflect.Struct:
			return field{kind: submessage, msg: s.of(e)}
		}
	case isInteger(ft):
		return field{kind: integer}
	case ft.Kind() == reflect.String || ft.Kind() == reflect.Slice:
		return field{kind: delimited}
	case ft.Kind() == reflect.Struct:
		return field{kind: submessage, msg: s.of(ft)}
	}
	panic(fmt.Sprintf("leanpod: %s.%s: no wire type for %s", t, sf.Name, sf.Type))
}

func deref(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}
