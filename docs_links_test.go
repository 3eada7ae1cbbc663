package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// docPages are the manual's pages: the README and every page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append([]string{"README.md"}, pages...)
}

// mdLine is one line of a markdown page outside its fenced code blocks.
type mdLine struct {
	n    int
	text string
}

// proseLines are a page's lines outside fenced code blocks.
func proseLines(text string) []mdLine {
	var out []mdLine
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, mdLine{i + 1, l})
		}
	}
	return out
}

var (
	headingRe    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	inlineCodeRe = regexp.MustCompile("`[^`]*`")
	linkRe       = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

// anchors are the ids GitHub gives a page's headings: lower case, the
// characters other than letters, digits, spaces, - and _ dropped, spaces
// made -, and a repeated id suffixed -1, -2, ….
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(text) {
		m := headingRe.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		id := slug(m[1])
		if n := seen[id]; n > 0 {
			ids[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// brokenLinks lists the relative links of page (read as text) whose file
// or anchor does not exist, as "page:line: target: why".
func brokenLinks(page, text string, read func(string) (string, error)) []string {
	var bad []string
	for _, l := range proseLines(text) {
		for _, m := range linkRe.FindAllStringSubmatch(inlineCodeRe.ReplaceAllString(l.text, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if why := checkTarget(page, text, target, read); why != "" {
				bad = append(bad, fmt.Sprintf("%s:%d: %s: %s", page, l.n, target, why))
			}
		}
	}
	return bad
}

func checkTarget(page, text, target string, read func(string) (string, error)) string {
	file, frag, _ := strings.Cut(target, "#")
	body := text
	if file != "" {
		path := filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
		if _, err := os.Stat(path); err != nil {
			return "no such file"
		}
		if frag == "" {
			return ""
		}
		if !strings.HasSuffix(path, ".md") {
			return "an anchor into a file that is not markdown"
		}
		var err error
		if body, err = read(path); err != nil {
			return err.Error()
		}
	}
	if frag != "" && !anchors(body)[frag] {
		return "no heading with this anchor"
	}
	return ""
}

func TestDocsLinksResolve(t *testing.T) {
	read := func(p string) (string, error) {
		b, err := os.ReadFile(p)
		return string(b), err
	}
	for _, page := range docPages(t) {
		text, err := read(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range brokenLinks(page, text, read) {
			t.Error(b)
		}
	}
}

// The checker itself: a good link, a missing file, a missing anchor, a
// repeated heading's second anchor, and a link inside code left alone.
func TestDocsLinkCheckerFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.md")
	if err := os.WriteFile(other, []byte("# Other\n\n## The run: `profdeck run` & more\n\n## Twice\n\n## Twice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "page.md")
	text := "# Page\n\n[ok](other.md#the-run-profdeck-run--more) [second](other.md#twice-1) [self](#page)\n" +
		"[gone](nothere.md) [no anchor](other.md#nope) [no self](#nope)\n`[code](nothere.md)`\n```\n[fenced](nothere.md)\n```\n"
	read := func(p string) (string, error) {
		b, err := os.ReadFile(p)
		return string(b), err
	}
	got := brokenLinks(page, text, read)
	want := []string{
		page + ":4: nothere.md: no such file",
		page + ":4: other.md#nope: no heading with this anchor",
		page + ":4: #nope: no heading with this anchor",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
