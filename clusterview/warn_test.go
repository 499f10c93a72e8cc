package clusterview

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/nsguard/nsguard/internal/jsonlog"
)

// TestWarningsAsRecords: under -log-format json the view's warnings are WARN records with
// what the text line formats in as a field of its own.
func TestWarningsAsRecords(t *testing.T) {
	var b bytes.Buffer
	if err := clog.Configure("json", &b); err != nil {
		t.Fatal(err)
	}
	defer clog.Configure("text", os.Stderr)
	defer jsonlog.SetOutput(jsonlog.SetOutput(&b))

	warnErr("cluster view cut off from the API server", errors.New("dial tcp: connection refused"))
	warnf(slog.String("after", "5s"), "cluster view not synced", "cluster view not synced after %s", "5s")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []map[string]any{
		{"level": "WARN", "plugin": "nsguard", "msg": "cluster view cut off from the API server", "error": "dial tcp: connection refused"},
		{"level": "WARN", "plugin": "nsguard", "msg": "cluster view not synced", "after": "5s"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		for k, v := range want[i] {
			if rec[k] != v {
				t.Errorf("record %d: %s=%v, want %v", i, k, rec[k], v)
			}
		}
	}
}
