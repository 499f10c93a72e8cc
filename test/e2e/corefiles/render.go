package corefiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Zone is the cluster domain of every stock Corefile (and NodeLocal DNSCache's
// __PILLAR__DNS__DOMAIN__).
const Zone = "cluster.local"

// Addrs are what the suite fills into a stock Corefile.
type Addrs struct {
	Listen    []string // addresses to bind on port 53; NodeLocal DNSCache's __PILLAR__LOCAL__DNS__ and __PILLAR__DNS__SERVER__ (one or both)
	Metrics   string   // host:port for prometheus
	Health    string   // host:port for health
	Ready     string   // host:port for ready
	ConfigDir string   // stands for k3s's /etc/coredns; see PrepareConfigDir

	ClusterDNS string // NodeLocal DNSCache: __PILLAR__CLUSTER__DNS__, the central CoreDNS
	Upstream   string // NodeLocal DNSCache: __PILLAR__UPSTREAM__SERVERS__, the upstream stand-in
}

// block is one server block of a Corefile: its line range and the directives on its first level.
type block struct {
	keys       []string
	start, end int // header line and closing line
	directives map[string]int
}

// Render returns src with a's addresses filled in and nsguard (one directive with its block,
// lines separated by \n, indented relative to the directive; empty for none) inserted into the
// block that holds kubernetes, or else the cluster.local block (NodeLocal DNSCache):
//
//   - "bind <Listen...>" as the first line of every block on port 53 without a bind of its own,
//     and in place of NodeLocal DNSCache's bind placeholders;
//   - prometheus, health and ready on their addresses, each keeping its block (lameduck);
//   - /etc/coredns/ becomes ConfigDir; the __PILLAR__ placeholders their values.
//
// Everything else, "forward . /etc/resolv.conf" included, is left as it is.
func Render(src string, a Addrs, nsguard string) (string, error) {
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	blocks, err := parse(lines)
	if err != nil {
		return "", err
	}
	target := guardBlock(blocks)
	if nsguard != "" && target == nil {
		return "", errors.New("no block holds kubernetes or serves " + Zone)
	}
	var out []string
	var errs []error
	for i, l := range lines {
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		b := blockAt(blocks, i)
		switch {
		case b != nil && i == b.start:
			out = append(out, fillPlaceholders(l, a))
			if _, hasBind := b.line("bind"); !hasBind && listensOn53(b.keys) {
				if len(a.Listen) == 0 {
					errs = append(errs, errors.New("no address to bind"))
				}
				out = append(out, firstIndent(lines, b)+"bind "+strings.Join(a.Listen, " "))
			}
			if _, hasKubernetes := b.line("kubernetes"); b == target && nsguard != "" && !hasKubernetes {
				out = append(out, indented(nsguard, firstIndent(lines, b))...)
			}
			continue
		case b == target && nsguard != "" && b.is(i, "kubernetes"):
			out = append(out, indented(nsguard, indent)...)
		}
		toks := tokens(l)
		if b == nil || len(toks) == 0 || !b.is(i, toks[0]) {
			out = append(out, fillPlaceholders(l, a))
			continue
		}
		rewritten, err := rewrite(l, toks, indent, a)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", i+1, err))
		}
		out = append(out, rewritten)
	}
	res := strings.Join(out, "\n") + "\n"
	for _, left := range []string{"__PILLAR__", "/etc/coredns"} {
		if strings.Contains(res, left) {
			errs = append(errs, fmt.Errorf("%s left in the rendered Corefile", left))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	return res, nil
}

// rewrite fills in directive line l: the listeners get their addresses, keeping any block.
func rewrite(l string, toks []string, indent string, a Addrs) (string, error) {
	opens := toks[len(toks)-1] == "{"
	withBlock := func(s string) string {
		if opens {
			return s + " {"
		}
		return s
	}
	listen := func(name, addr string) (string, error) {
		if addr == "" {
			return "", fmt.Errorf("no address for %s", name)
		}
		return indent + withBlock(name+" "+addr), nil
	}
	switch toks[0] {
	case "prometheus":
		return listen("prometheus", a.Metrics)
	case "health":
		return listen("health", a.Health)
	case "ready":
		return listen("ready", a.Ready)
	case "bind":
		if slices.ContainsFunc(toks, func(t string) bool { return strings.HasPrefix(t, "__PILLAR__") }) {
			return indent + "bind " + strings.Join(a.Listen, " "), nil
		}
	}
	return fillPlaceholders(l, a), nil
}

// fillPlaceholders replaces NodeLocal DNSCache's placeholders and k3s's /etc/coredns/.
func fillPlaceholders(l string, a Addrs) string {
	r := strings.NewReplacer(
		"__PILLAR__DNS__DOMAIN__", Zone,
		"__PILLAR__CLUSTER__DNS__", a.ClusterDNS,
		"__PILLAR__UPSTREAM__SERVERS__", a.Upstream,
		"/etc/coredns/", strings.TrimSuffix(a.ConfigDir, "/")+"/",
	)
	return r.Replace(l)
}

// parse finds the server blocks and the line of each first-level directive.
func parse(lines []string) ([]*block, error) {
	var blocks []*block
	var cur *block
	depth := 0
	for i, l := range lines {
		toks := tokens(l)
		if depth == 1 && len(toks) > 0 && toks[0] != "}" {
			if _, dup := cur.directives[toks[0]]; !dup {
				cur.directives[toks[0]] = i
			}
		}
		for _, t := range toks {
			switch t {
			case "{":
				if depth == 0 {
					cur = &block{keys: slices.Clone(toks[:len(toks)-1]), start: i, directives: map[string]int{}}
					blocks = append(blocks, cur)
				}
				depth++
			case "}":
				depth--
				if depth < 0 {
					return nil, fmt.Errorf("line %d: unbalanced }", i+1)
				}
				if depth == 0 {
					cur.end = i
				}
			}
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced {")
	}
	return blocks, nil
}

// guardBlock is where nsguard goes: the block with kubernetes, else the one serving Zone.
func guardBlock(blocks []*block) *block {
	for _, b := range blocks {
		if _, ok := b.directives["kubernetes"]; ok {
			return b
		}
	}
	for _, b := range blocks {
		for _, k := range b.keys {
			host := strings.TrimSuffix(strings.Split(k, ":")[0], ".")
			if host == Zone || host == "__PILLAR__DNS__DOMAIN__" {
				return b
			}
		}
	}
	return nil
}

// line is where directive name is on the block's first level.
func (b *block) line(name string) (int, bool) {
	i, ok := b.directives[name]
	return i, ok
}

// is reports whether line i is directive name on the block's first level.
func (b *block) is(i int, name string) bool {
	j, ok := b.line(name)
	return ok && i == j
}

func blockAt(blocks []*block, i int) *block {
	for _, b := range blocks {
		if i >= b.start && i <= b.end {
			return b
		}
	}
	return nil
}

// listensOn53 reports whether every key of a server block is on port 53, the default.
func listensOn53(keys []string) bool {
	for _, k := range keys {
		if i := strings.LastIndex(k, ":"); i >= 0 && k[i+1:] != "53" {
			return false
		}
	}
	return true
}

// firstIndent is the indentation of a block's first directive, for lines added to it.
func firstIndent(lines []string, b *block) string {
	for _, l := range lines[b.start+1 : b.end] {
		if strings.TrimSpace(l) != "" {
			return l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		}
	}
	return "    "
}

func indented(text, indent string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		out = append(out, indent+l)
	}
	return out
}

// NodeHosts is the node list k3s keeps in /etc/coredns/NodeHosts (hosts-file format).
const NodeHosts = "10.53.0.1 node-1\n"

// PrepareConfigDir makes dir what the stock Corefiles expect beside them or at /etc/coredns:
// k3s's NodeHosts file, and an empty custom/ for the import lines of k3s and AKS.
func PrepareConfigDir(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "custom"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "NodeHosts"), []byte(NodeHosts), 0o644)
}
