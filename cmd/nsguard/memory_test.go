package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/nsguard/nsguard/audit/model"
)

// The real CLI's peak memory, as the kernel counts it (ru_maxrss: the process's VmHWM when
// it ends): a test process's own heap says nothing about what the binary holds.

var bins struct {
	once          sync.Once
	dir, cli, rss string
	err           error
}

// binaries builds nsguard, and testdata/peakrss that measures it, once for the tests that
// run it as a process.
func binaries(t *testing.T) (nsguard, peakrss string) {
	t.Helper()
	bins.once.Do(func() {
		if bins.dir, bins.err = os.MkdirTemp("", "nsguard-cli"); bins.err != nil {
			return
		}
		bins.cli, bins.rss = filepath.Join(bins.dir, "nsguard"), filepath.Join(bins.dir, "peakrss")
		for _, b := range [][2]string{{bins.cli, "."}, {bins.rss, "./testdata/peakrss"}} {
			// As make cli builds what operators install.
			build := exec.Command("go", "build", "-trimpath", "-o", b[0], b[1])
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				bins.err = fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
				return
			}
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.cli, bins.rss
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// runMeasured runs the CLI on stdin and returns its exit status, stderr and peak RSS.
func runMeasured(t *testing.T, stdin io.Reader, args ...string) (code int, stderr string, peak int64) {
	t.Helper()
	nsguard, peakrss := binaries(t)
	cmd := exec.Command(peakrss, append([]string{nsguard}, args...)...)
	cmd.Stdin = stdin
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	out, last, _ := strings.Cut(strings.TrimSuffix(errb.String(), "\n"), "\npeak-rss ")
	if _, err := fmt.Sscan(last, &peak); err != nil || cmd.ProcessState.ExitCode() == 125 {
		t.Fatalf("peakrss: %q", errb.String())
	}
	return cmd.ProcessState.ExitCode(), out, peak
}

const mib = 1 << 20

// The shapes that made audit -f grow far beyond its input: Lists nested in Lists, one big
// YAML document of a kind nsguard skips, one big List. Each file ends with a capture (a
// Service named like a namespace), so that a load that reads everything exits 1.

const capture = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns-1"}},` +
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"ns-1","namespace":"other"},"spec":{"clusterIP":"10.96.0.1"}}`

func namespaceJSON(i int) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns-%d","labels":{"team":"platform"}}}`, i)
}

// nestedLists is a JSON List whose last item is a List, depth deep, each level with
// namespaces enough to make size bytes in all.
func nestedLists(depth, size int) string {
	var b strings.Builder
	per := size / depth / len(namespaceJSON(100000))
	for d := range depth {
		b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
		for i := range per {
			b.WriteString(namespaceJSON(d*per + i))
			b.WriteByte(',')
		}
	}
	b.WriteString(capture)
	b.WriteString(strings.Repeat("]}", depth))
	return b.String()
}

// namespaceList is a List of namespaces of about size bytes, in JSON or YAML.
func namespaceList(size int, yaml bool) string {
	var b strings.Builder
	if yaml {
		b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ns-%d\n    labels: {team: platform}\n", i)
		}
		b.WriteString("- " + strings.Replace(capture, "},{", "}\n- {", 1) + "\n")
		return b.String()
	}
	b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	for i := 0; b.Len() < size; i++ {
		b.WriteString(namespaceJSON(i))
		b.WriteByte(',')
	}
	b.WriteString(capture + "]}")
	return b.String()
}

// namespaceDocuments are YAML documents of one namespace each, about size bytes in all.
func namespaceDocuments(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-%d\n", i)
	}
	b.WriteString("---\n" + strings.Replace(capture, "},{", "}\n---\n{", 1) + "\n")
	return b.String()
}

// configMap is one YAML ConfigMap of about size bytes: short keys, the costliest YAML to
// read per byte.
func configMap(size int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	return b.String() + "---\n" + strings.Replace(capture, "},{", "}\n---\n{", 1) + "\n"
}

// kept is what the model holds of input, measured in this process: the heap that loading
// leaves live.
func kept(input string) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := model.LoadFiles([]string{"-"}, strings.NewReader(input))
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	runtime.KeepAlive(input)
	if err != nil {
		return 0
	}
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// TestAuditMemory holds audit -f to its help: memory within 5 times the input beside what
// the process needs anyway and what the model keeps, or exit status 2 naming the bound the
// input is past. A JSON document is held whole as read, and a List's items once more (and
// once more again at the step into a List in a List). A YAML document is read whole by the
// YAML library, at up to about 50 times its size: it is bounded by size, and that allowance
// is the one row allowed beyond 5 times its input.
func TestAuditMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and reads inputs of 30 MiB")
	}
	_, _, base := runMeasured(t, strings.NewReader("[]"), "audit", "-f", "-")
	tests := []struct {
		name  string
		input func() string
		exit  int
		err   string // in stderr, for exit status 2
		extra int64  // allowed beyond 4 times the input
	}{
		{"JSON Lists nested 300 deep, 10 MB", func() string { return nestedLists(300, 10*mib) }, 2, "<stdin>: document 1: a List nested in Lists more than 4 deep", 0},
		{"JSON Lists nested 4 deep, 10 MB", func() string { return nestedLists(4, 10*mib) }, 1, "", 0},
		{"YAML ConfigMap, 30 MiB", func() string { return configMap(30 * mib) }, 2, "<stdin>: document 1: a YAML document over 4 MiB", 0},
		{"YAML List of namespaces, 30 MiB", func() string { return namespaceList(30*mib, true) }, 2, "<stdin>: document 1: a YAML document over 4 MiB", 0},
		{"JSON List of namespaces, 10 MiB", func() string { return namespaceList(10*mib, false) }, 1, "", 0},
		{"YAML documents of a namespace each, 4 MiB", func() string { return namespaceDocuments(4 * mib) }, 1, "", 0},
		{"YAML ConfigMap just under the bound", func() string { return configMap(4*mib - 4096) }, 1, "", 4 * mib * 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := tt.input()
			code, stderr, peak := runMeasured(t, strings.NewReader(input), "audit", "-f", "-", "-o", "json")
			if code != tt.exit || tt.exit == 2 && !strings.Contains(stderr, tt.err) {
				t.Errorf("exit status %d, stderr %q; want %d and %q", code, stderr, tt.exit, tt.err)
			}
			kept := kept(input)
			limit := base + 5*int64(len(input)) + kept + tt.extra
			t.Logf("%d bytes in, peak RSS %d MiB (without input %d MiB, model %d MiB), limit %d MiB", len(input), peak>>20, base>>20, kept>>20, limit>>20)
			if peak > limit {
				t.Errorf("peak RSS %d MiB for %d MiB in: over %d MiB", peak>>20, len(input)>>20, limit>>20)
			}
		})
	}
}
