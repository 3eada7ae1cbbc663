package main

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// serialMarkers are the test helpers that time the client against the
// emulator's schedule (or the budget's parts against the measured TPOT) or
// drive a real terminal: a test that reaches one runs
// in scripts/test's serial pass.
var serialMarkers = map[string]bool{"timed": true, "timedSweep": true, "pathLevel": true,
	"startTmux": true, "needTmux": true, "checkBudgetAgrees": true}

// serialPatterns reads scripts/serial-tests, one pattern a line.
func serialPatterns(t *testing.T) []string {
	f, err := os.Open("scripts/serial-tests")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pats []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			pats = append(pats, line)
		}
	}
	return pats
}

// testFuncs parses every _test.go file and returns, per package directory,
// each function's callees by name, and the top-level tests with their files.
func testFuncs(t *testing.T) (map[string]map[string][]string, map[string]string) {
	calls := map[string]map[string][]string{}
	tests := map[string]string{} // "dir Name" -> file
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if calls[dir] == nil {
			calls[dir] = map[string][]string{}
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			if fn.Recv == nil && strings.HasPrefix(name, "Test") && name != "TestMain" {
				tests[dir+" "+name] = path
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					switch f := c.Fun.(type) {
					case *ast.Ident:
						calls[dir][name] = append(calls[dir][name], f.Name)
					case *ast.SelectorExpr:
						calls[dir][name] = append(calls[dir][name], f.Sel.Name)
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return calls, tests
}

// reaches says whether fn calls a serial marker, directly or through the
// package's other test functions.
func reaches(calls map[string][]string, fn string, seen map[string]bool) bool {
	if seen[fn] {
		return false
	}
	seen[fn] = true
	for _, c := range calls[fn] {
		if serialMarkers[c] || reaches(calls, c, seen) {
			return true
		}
	}
	return false
}

// TestSerialListComplete holds scripts/serial-tests: every test that times
// the client or drives a terminal, and every test of a *e2e*_test.go file,
// matches a line, and every line matches a test.
func TestSerialListComplete(t *testing.T) {
	pats := serialPatterns(t)
	res := make([]*regexp.Regexp, len(pats))
	used := make([]bool, len(pats))
	for i, p := range pats {
		res[i] = regexp.MustCompile("^(" + p + ")$")
	}
	calls, tests := testFuncs(t)
	keys := make([]string, 0, len(tests))
	for key := range tests {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		file := tests[key]
		dir, name, _ := strings.Cut(key, " ")
		listed := false
		for i, re := range res {
			if re.MatchString(name) {
				listed, used[i] = true, true
			}
		}
		must := strings.Contains(filepath.Base(file), "e2e") || reaches(calls[dir], name, map[string]bool{})
		if must && !listed {
			t.Errorf("%s: %s times the client or drives a terminal; add it to scripts/serial-tests", file, name)
		}
	}
	for i, p := range pats {
		if !used[i] {
			t.Errorf("scripts/serial-tests: %q matches no test", p)
		}
	}
}
