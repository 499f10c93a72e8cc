package nsguard

import (
	"bytes"
	"io"
	golog "log"
	"os"
	"sync"
	"testing"

	clog "github.com/coredns/coredns/plugin/pkg/log"
)

func TestMain(m *testing.M) {
	clog.Discard() // tests that read the log set their own output
	os.Exit(m.Run())
}

// captureLog sends the log to a buffer for the rest of the test.
func captureLog(t *testing.T) *lockedBuffer {
	buf := &lockedBuffer{}
	golog.SetOutput(buf)
	t.Cleanup(func() { golog.SetOutput(io.Discard) })
	return buf
}

// lockedBuffer is a buffer that goroutines of the plugin write while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
