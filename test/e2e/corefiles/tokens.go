package corefiles

import "strings"

// tokens splits one Corefile line as Caddy's lexer does: on white space, with "quoted" tokens
// kept whole (a quoted "{4,}" in a template's regex is no block), and # starting a comment.
func tokens(line string) []string {
	var toks []string
	var cur strings.Builder
	inTok, quoted, escaped := false, false, false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quoted && r == '\\':
			cur.WriteRune(r)
			escaped = true
		case r == '"':
			cur.WriteRune(r)
			quoted, inTok = !quoted, true
		case quoted:
			cur.WriteRune(r)
		case r == ' ' || r == '\t':
			if inTok {
				toks = append(toks, cur.String())
				cur.Reset()
				inTok = false
			}
		case r == '#' && !inTok:
			return toks
		default:
			cur.WriteRune(r)
			inTok = true
		}
	}
	if inTok {
		toks = append(toks, cur.String())
	}
	return toks
}
