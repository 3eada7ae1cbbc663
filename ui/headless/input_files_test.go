package headless_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

// A missing or wrong input file is one line naming it, exit 2: no
// operating system call in it, no line per unreadable line of JSON.
func TestInputFileOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nofile.json")
	doc := filepath.Join(dir, "search.json")
	if err := os.WriteFile(doc, []byte("{\n  \"url\": \"x\",\n  \"levels\": [],\n  \"search\": {\n    \"done\": true\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type main = func(context.Context, []string, io.Writer, io.Writer) int
	for _, tc := range []struct {
		name string
		main main
		args []string
		want string
	}{
		{"capacity", headless.CapacityMain, []string{"--rate", "2", missing}, missing + ": no such file or directory"},
		{"compare", headless.CompareMain, []string{missing, doc}, missing + ": no such file or directory"},
		{"report", headless.ReportMain, []string{doc, "-o", filepath.Join(dir, "nb.md")}, doc + ": a result document, not a journal"},
		{"parse vllm-log", headless.ParseLogMain, []string{missing}, missing + ": no such file or directory"},
	} {
		code, _, errs := runCLI(t, tc.main, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(errs, "stat ") || strings.Contains(errs, "open ") {
			t.Errorf("%s: exit %d, stderr %q, want one line with %q", tc.name, code, errs, tc.want)
		}
	}
}
