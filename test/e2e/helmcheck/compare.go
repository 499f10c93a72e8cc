package main

import (
	"fmt"
	"slices"
	"strings"
)

// OnlyNSGuard checks that guarded is stock with one nsguard directive (and its block) added,
// and nothing else changed, and returns the added lines.
func OnlyNSGuard(stock, guarded string) (string, error) {
	lines := strings.Split(guarded, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return directive(l) == "nsguard" })
	if start < 0 {
		return "", fmt.Errorf("no nsguard directive in:\n%s", guarded)
	}
	end := start // the line that closes nsguard's block, or the directive alone
	for depth := 0; ; end++ {
		if end == len(lines) {
			return "", fmt.Errorf("nsguard's block is not closed in:\n%s", guarded)
		}
		depth += strings.Count(lines[end], "{") - strings.Count(lines[end], "}")
		if depth == 0 {
			break
		}
	}
	rest := slices.Concat(lines[:start], lines[end+1:])
	if slices.ContainsFunc(rest, func(l string) bool { return directive(l) == "nsguard" }) {
		return "", fmt.Errorf("more than one nsguard directive in:\n%s", guarded)
	}
	if want := strings.Split(stock, "\n"); !slices.Equal(rest, want) {
		return "", fmt.Errorf("beside nsguard, the Corefile differs from the chart's default:\n%s", diff(want, rest))
	}
	return strings.Join(lines[start:end+1], "\n"), nil
}

// directive is a Corefile line's first token.
func directive(l string) string {
	f := strings.Fields(l)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// diff shows the lines of a and b that differ, from the first difference on: "-" for the
// chart's default, "+" for the values'. Enough to see what to change; not a minimal diff.
func diff(a, b []string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	j, k := len(a), len(b)
	for j > i && k > i && a[j-1] == b[k-1] {
		j--
		k--
	}
	var out strings.Builder
	fmt.Fprintf(&out, "from line %d:\n", i+1)
	for _, l := range a[i:j] {
		out.WriteString("-" + l + "\n")
	}
	for _, l := range b[i:k] {
		out.WriteString("+" + l + "\n")
	}
	return out.String()
}
