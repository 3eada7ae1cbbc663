package main

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/profdeck/profdeck"

// importRules are the layering rules: engines (phases/) never import the
// front-ends or the report, hosts (remote/) import no engine but the
// model plan the simulator imitates (and the words engines share, package
// phases itself: the simulator's load stages are the engine's), the report (session, notebook) knows
// no campaign file, the campaign (file, flags, mapping to engines) knows
// no front-end, and the cockpit does not use the headless commands.
// withTests applies a rule to test files too.
var importRules = []struct {
	under     string   // packages under this path
	forbidden []string // may import no package under these
	allowed   []string // except these
	exactly   []string // and these packages (not those under them)
	withTests bool
}{
	{under: "phases", forbidden: []string{module + "/campaign", module + "/report", module + "/ui"}, withTests: true},
	{under: "remote", forbidden: []string{module + "/campaign", module + "/phases", module + "/report", module + "/ui"},
		allowed: []string{module + "/phases/model"}, exactly: []string{module + "/phases"}},
	{under: "report", forbidden: []string{module + "/campaign", module + "/ui"}, withTests: true},
	{under: "campaign", forbidden: []string{module + "/ui"}, withTests: true},
	// The cockpit shares the campaign package with the headless commands,
	// never the commands themselves.
	{under: "ui", forbidden: []string{module + "/ui/headless"}},
}

// importViolations lists "package imports forbidden" for every broken rule
// in the module rooted at root.
func importViolations(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, r := range importRules {
		base := filepath.Join(root, r.under)
		err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") {
				return filepath.SkipDir
			}
			pkg, err := build.Default.ImportDir(path, 0)
			if err != nil {
				if _, ok := err.(*build.NoGoError); ok {
					return nil
				}
				return err
			}
			imports := pkg.Imports
			if r.withTests {
				imports = append(append(imports, pkg.TestImports...), pkg.XTestImports...)
			}
			rel, _ := filepath.Rel(root, path)
			for _, imp := range imports {
				if !slices.Contains(r.exactly, imp) && breaks(imp, r.forbidden, r.allowed) {
					out = append(out, filepath.ToSlash(rel)+" imports "+imp)
				}
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return out
}

func breaks(imp string, forbidden, allowed []string) bool {
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	for _, a := range allowed {
		if under(imp, a) {
			return false
		}
	}
	for _, f := range forbidden {
		if under(imp, f) {
			return true
		}
	}
	return false
}

// TestImportRules holds the module to its layering.
func TestImportRules(t *testing.T) {
	for _, v := range importViolations(t, ".") {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations checks that the rule test fails on a tree
// that breaks each rule, and passes the allowed import.
func TestImportRulesCatchViolations(t *testing.T) {
	root := t.TempDir()
	write := func(path, src string) {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("phases/a/a.go", "package a\nimport _ \""+module+"/campaign\"\n")
	write("phases/b/b_test.go", "package b\nimport _ \""+module+"/ui/cli\"\n")
	write("remote/c/c.go", "package c\nimport _ \""+module+"/phases/load\"\n")
	write("remote/d/d.go", "package d\nimport _ \""+module+"/phases/model\"\n")
	write("remote/e/e_test.go", "package e\nimport _ \""+module+"/phases/profile\"\n")
	write("remote/e2/e2.go", "package e2\nimport _ \""+module+"/phases\"\n")
	write("report/f/f.go", "package f\nimport _ \""+module+"/campaign\"\n")
	write("campaign/g/g_test.go", "package g\nimport _ \""+module+"/ui/headless\"\n")
	write("ui/panes/h/h.go", "package h\nimport _ \""+module+"/ui/headless\"\n")
	got := strings.Join(importViolations(t, root), "\n")
	want := "phases/a imports " + module + "/campaign\n" +
		"phases/b imports " + module + "/ui/cli\n" +
		"remote/c imports " + module + "/phases/load\n" +
		"report/f imports " + module + "/campaign\n" +
		"campaign/g imports " + module + "/ui/headless\n" +
		"ui/panes/h imports " + module + "/ui/headless"
	if got != want {
		t.Errorf("violations:\n%s\nwant:\n%s", got, want)
	}
}
