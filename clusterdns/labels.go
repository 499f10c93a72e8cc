package clusterdns

import (
	"errors"
	"fmt"
	"strings"
)

// IsDNSLabel reports whether s is an RFC 1123 label, in any case: the names Kubernetes
// gives namespaces. Escaped or non-ASCII labels are never one.
func IsDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20 // ASCII lower case; digits and '-' are unchanged by it
		switch {
		case c >= 'a' && c <= 'z', s[i] >= '0' && s[i] <= '9':
		case s[i] == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// IsServiceName reports whether s is an RFC 1035 label, the names Kubernetes gives
// Services: an RFC 1123 label that starts with a letter. So a dashed IPv4 address, the
// name cluster DNS gives an endpoint without a hostname, is never a Service's name.
func IsServiceName(s string) bool {
	return IsDNSLabel(s) && s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z'
}

// CheckName returns an error naming what is wrong unless s, with or without its trailing
// dot, is a domain name of hostname labels (letters, digits and '-' inside); underscores
// are allowed, as SRV names have them.
func CheckName(s string) error {
	t := strings.TrimSuffix(s, ".")
	switch {
	case t == "":
		return errors.New("empty name")
	case len(t) > 253:
		return fmt.Errorf("%d octets, more than a name's 253", len(t))
	}
	for l := range strings.SplitSeq(t, ".") {
		switch {
		case l == "":
			return errors.New("empty label (a dot at the start, or two in a row)")
		case len(l) > 63 || strings.Trim(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "":
			return fmt.Errorf("label %q is not a DNS label", l)
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Errorf("label %q starts or ends with '-'", l)
		}
	}
	return nil
}

// AppendLower appends s in ASCII lower case, the form of Kubernetes names. It does not
// allocate when buf has room.
func AppendLower(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		buf = append(buf, lowerASCII(s[i]))
	}
	return buf
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
