package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be, from its func line to its
// closing brace.
const maxFuncLines = 80

// longTables are the functions allowed any length because they are tables
// of data (one case or one entry a line), keyed "package-dir Recv.Name",
// each with why it is one.
var longTables = map[string]string{}

// funcLengths maps every function of the module's non-test files to its
// length in lines, keyed "package-dir Recv.Name".
func funcLengths(t *testing.T, root string) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			key := filepath.ToSlash(dir) + " " + funcName(fd)
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			out[key] = max(out[key], n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if ix, ok := typ.(*ast.IndexExpr); ok { // a generic receiver
		typ = ix.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// longOnes lists "key (n lines)" for every function over the limit that
// is not a table of data, longest first.
func longOnes(lengths map[string]int) []string {
	var keys []string
	for k, n := range lengths {
		if _, table := longTables[k]; n > maxFuncLines && !table {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return lengths[keys[i]] > lengths[keys[j]] })
	for i, k := range keys {
		keys[i] = k + " (" + strconv.Itoa(lengths[k]) + " lines)"
	}
	return keys
}

// TestFunctionLength fails when a function is over 80 lines, a table of
// data excepted.
func TestFunctionLength(t *testing.T) {
	for _, k := range longOnes(funcLengths(t, ".")) {
		t.Errorf("%s: over %d lines; split it (a table of data goes in longTables)", k, maxFuncLines)
	}
}

// TestFunctionLengthCatches checks the scan on a tree with a long function
// beside a table of data and a short one, methods included.
func TestFunctionLengthCatches(t *testing.T) {
	root := t.TempDir()
	body := func(name string, lines int) string {
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 1\n", lines-2) + "}\n"
	}
	src := "package a\n" + body("short", 80) + body("long", 81) + "type T struct{}\n" +
		"func (t *T) " + strings.TrimPrefix(body("method", 91), "func ") + "func (T) " + strings.TrimPrefix(body("table", 90), "func ")
	if err := os.MkdirAll(filepath.Join(root, "x", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "x", "a", "a.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := longTables
	defer func() { longTables = saved }()
	longTables = map[string]string{"x/a T.table": "one entry a line"}
	got := strings.Join(longOnes(funcLengths(t, root)), "\n")
	if want := "x/a T.method (91 lines)\nx/a long (81 lines)"; got != want {
		t.Errorf("long functions:\n%s\nwant:\n%s", got, want)
	}
}
