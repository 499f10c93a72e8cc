package nsguard

import (
	"bytes"
	"io"
	golog "log"
	"os"
	"testing"

	clog "github.com/coredns/coredns/plugin/pkg/log"
)

func TestMain(m *testing.M) {
	clog.Discard() // tests that read the log set their own output
	os.Exit(m.Run())
}

// captureLog sends the log to a buffer for the rest of the test.
func captureLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	golog.SetOutput(&buf)
	t.Cleanup(func() { golog.SetOutput(io.Discard) })
	return &buf
}
