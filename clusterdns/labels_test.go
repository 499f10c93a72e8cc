package clusterdns

import (
	"strings"
	"testing"
)

func TestIsDNSLabel(t *testing.T) {
	tests := []struct {
		label string
		want  bool
	}{
		{"my-app", true}, {"My-App", true}, {"a", true}, {"0", true}, {"a1-b2", true},
		{strings.Repeat("x", 63), true}, {strings.Repeat("x", 64), false},
		{"", false}, {"-a", false}, {"a-", false}, {"a_b", false}, {"a.b", false}, {`a\.b`, false},
		{"mý", false}, {"*", false}, {"@", false}, {"[", false}, {"`", false}, {"{", false},
	}
	for _, tc := range tests {
		if got := IsDNSLabel(tc.label); got != tc.want {
			t.Errorf("IsDNSLabel(%q) = %v, want %v", tc.label, got, tc.want)
		}
	}
}

func TestIsServiceName(t *testing.T) {
	tests := []struct {
		label string
		want  bool
	}{
		{"my-app", true}, {"Web-0", true}, {"a", true},
		{"10-244-1-5", false}, {"0a", false}, {"", false}, {"a_b", false}, {"-a", false},
	}
	for _, tc := range tests {
		if got := IsServiceName(tc.label); got != tc.want {
			t.Errorf("IsServiceName(%q) = %v, want %v", tc.label, got, tc.want)
		}
	}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		want string // "" for a name
	}{
		{"cluster.local", ""}, {"cluster.local.", ""}, {"Cluster.Local", ""}, {"_https._tcp.x.y", ""}, {"my-app", ""},
		{"", "empty name"}, {".", "empty name"}, {"a..b", "empty label"}, {".a", "empty label"}, {"http://", `label "http://"`},
		{"-", `label "-" starts or ends with '-'`}, {"a.-b.c", `label "-b" starts`}, {"a-.b", `label "a-" starts`}, {"a--b.c", ""},
		{"my_app!", `label "my_app!"`}, {"mý-app", `label "mý-app"`},
		{strings.Repeat("a", 64) + ".local", `label "aaaa`}, {strings.Repeat("a.", 127) + "bb", "256 octets"},
	}
	for _, tc := range tests {
		err := CheckName(tc.name)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckName(%q) = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestAppendLower(t *testing.T) {
	var buf [16]byte
	if got := string(AppendLower(buf[:0], "My-App.SVC")); got != "my-app.svc" {
		t.Errorf("got %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { AppendLower(buf[:0], "My-App") }); n != 0 {
		t.Errorf("AppendLower allocates %v times", n)
	}
}
