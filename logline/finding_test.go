package logline

import (
	"errors"
	"testing"
)

func TestFindingLine(t *testing.T) {
	tests := []struct {
		name string
		f    Finding
		want string
	}{
		{"appears", Finding{Subject: "Namespace my-app", Check: "namespace-captures-service", Severity: "warning",
			Name: "my-app.svc.cluster.local.", Message: "namespace my-app captures", Fix: "use my-app.new-namespace-2"},
			`cluster finding "Namespace my-app": check=namespace-captures-service severity=warning name="my-app.svc.cluster.local." message="namespace my-app captures" fix="use my-app.new-namespace-2"`},
		{"gone, held back before", Finding{Gone: true, Subject: "Namespace com", Check: "reserved-namespace", Severity: "info",
			Message: "namespace com was deleted", Suppressed: 2},
			`cluster finding gone "Namespace com": check=reserved-namespace severity=info message="namespace com was deleted" suppressed=2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(tt.f.Append(nil))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// nsguard offenders counts answers: a finding is not one.
			if _, err := Parse(Prefix + got); !errors.Is(err, ErrOther) {
				t.Errorf("Parse: %v, want ErrOther", err)
			}
		})
	}
}
