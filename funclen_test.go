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

// longTables are functions allowed any length because they are tables of
// data (one case or one entry a line), keyed as longFuncs names them.
var longTables = map[string]string{}

// longFuncs are the functions still over maxFuncLines, each with its
// length when it was listed, to be split, longest first; no other
// function may join them (one listed that grew is logged).
var longFuncs = map[string]int{}

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
// neither table names, longest first.
func longOnes(lengths map[string]int) []string {
	var keys []string
	for k, n := range lengths {
		if n <= maxFuncLines {
			continue
		}
		if _, ok := longTables[k]; ok {
			continue
		}
		if _, ok := longFuncs[k]; ok {
			continue
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lengths[keys[i]] > lengths[keys[j]] })
	for i, k := range keys {
		keys[i] = k + " (" + strconv.Itoa(lengths[k]) + " lines)"
	}
	return keys
}

// TestFunctionLength fails when a function over 80 lines appears; it logs
// the listed ones that grew and those that have come down.
func TestFunctionLength(t *testing.T) {
	lengths := funcLengths(t, ".")
	for _, k := range longOnes(lengths) {
		t.Errorf("%s: over %d lines; split it (a table of data goes in longTables)", k, maxFuncLines)
	}
	for k, was := range longFuncs {
		if n := lengths[k]; n > was {
			t.Logf("%s grew from %d to %d lines", k, was, n)
		}
		if lengths[k] <= maxFuncLines {
			t.Logf("%s is %d lines now: take it off longFuncs", k, lengths[k])
		}
	}
}

// TestFunctionLengthCatches checks the scan on a tree with a new long
// function beside listed ones and a short one.
func TestFunctionLengthCatches(t *testing.T) {
	root := t.TempDir()
	body := func(name string, lines int) string {
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 1\n", lines-2) + "}\n"
	}
	src := "package a\n" + body("short", 80) + body("long", 81) + "type T struct{}\n" +
		"func (t *T) " + strings.TrimPrefix(body("grew", 91), "func ") + "func (T) " + strings.TrimPrefix(body("kept", 90), "func ")
	if err := os.MkdirAll(filepath.Join(root, "x", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "x", "a", "a.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := longFuncs
	defer func() { longFuncs = saved }()
	longFuncs = map[string]int{"x/a T.grew": 90, "x/a T.kept": 90}
	got := strings.Join(longOnes(funcLengths(t, root)), "\n")
	if want := "x/a long (81 lines)"; got != want {
		t.Errorf("long functions:\n%s\nwant:\n%s", got, want)
	}
}
