package profile

import "strings"

// Shorten makes a kernel name fit in width runes for display: it drops a
// leading "void ", the argument list and, if still too long, template
// arguments, then cuts with "…".
func Shorten(name string, width int) string {
	if width <= 0 {
		return ""
	}
	n := strings.TrimPrefix(name, "void ")
	if r := []rune(n); len(r) > width {
		if i := argListStart(n); i > 0 {
			n = n[:i]
		}
	}
	if r := []rune(n); len(r) > width {
		if i := strings.IndexByte(n, '<'); i > 0 {
			n = n[:i] + "<…>"
		}
	}
	r := []rune(n)
	if len(r) <= width {
		return n
	}
	if width == 1 {
		return "…"
	}
	return string(r[:width-1]) + "…"
}

// argListStart finds the '(' that opens a demangled name's argument list:
// the last top-level one (template arguments can hold parentheses).
func argListStart(s string) int {
	depth, last := 0, -1
	for i, c := range s {
		switch c {
		case '<':
			depth++
		case '>':
			if depth > 0 {
				depth--
			}
		case '(':
			if depth == 0 && i > 0 {
				last = i
			}
		}
	}
	return last
}
