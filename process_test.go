package nsguard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// processWide are the calls that set the policy of the whole CoreDNS process, for every
// plugin in it: its memory is the operator's (GOMEMLIMIT, GOGC), not a plugin's.
var processWide = map[string][]string{
	"runtime":        {"GC", "GOMAXPROCS", "LockOSThread"},
	"runtime/debug":  {"SetGCPercent", "SetMemoryLimit", "FreeOSMemory", "SetMaxStack", "SetMaxThreads", "SetTraceback", "SetPanicOnFault"},
	"os":             {"Setenv", "Unsetenv", "Clearenv"},
	"k8s.io/klog/v2": {"InitFlags", "SetOutput", "SetLogger", "LogToStderr"},
}

// TestNoProcessWideSettings: no code that CoreDNS links with nsguard sets a process-wide
// policy. The operator CLI, the test suites and the tools are their own processes.
func TestNoProcessWideSettings(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch path {
			case "test", "tools", "cmd/nsguard", "hack", "testdata", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		names := map[string]string{} // local name → import path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if p == "k8s.io/klog/v2" {
				name = "klog"
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok {
				for _, fn := range processWide[names[x.Name]] {
					if sel.Sel.Name == fn {
						t.Errorf("%s calls %s.%s: a plugin must not set the process's policy", path, names[x.Name], fn)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
