package nsguard

import (
	"os"
	"testing"

	clog "github.com/coredns/coredns/plugin/pkg/log"
)

func TestMain(m *testing.M) {
	clog.Discard() // tests that read the log set their own output
	os.Exit(m.Run())
}
