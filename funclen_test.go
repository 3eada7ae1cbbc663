package main

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
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
// of data (one case or one entry a line), keyed "package-dir Recv.Name"
// (Go) or "file.py Class.name" (Python), each with why it is one.
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

// pyDirs are the folders whose Python files are held to the same limit.
var pyDirs = []string{"phases", "scripts"}

// pyLengths prints "path<TAB>qualified name<TAB>lines" for every def
// (methods and nested functions too: Class.name, outer.inner) of the files
// named on stdin, one a line; lines run from the def line to the last line
// of its body.
const pyLengths = `
import ast, sys
def walk(path, node, prefix):
    for c in ast.iter_child_nodes(node):
        if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef)):
            print("%s\t%s%s\t%d" % (path, prefix, c.name, c.end_lineno - c.lineno + 1))
            walk(path, c, prefix + c.name + ".")
        elif isinstance(c, ast.ClassDef):
            walk(path, c, prefix + c.name + ".")
        else:
            walk(path, c, prefix)
for path in sys.stdin.read().splitlines():
    with open(path, "rb") as f:
        walk(path, ast.parse(f.read(), path), "")
`

// pyFuncLengths maps every def of the non-test Python files under root's
// pyDirs to its length in lines, keyed "file.py Class.name" (the path
// relative to root). Without python3 it skips, except in CI (CI set),
// where python3 is installed and its absence fails.
func pyFuncLengths(t *testing.T, root string) map[string]int {
	t.Helper()
	var files []string
	for _, dir := range pyDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			n := d.Name()
			if d.IsDir() && (n == "testdata" || n == "__pycache__" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(n, ".py") && !strings.HasPrefix(n, "test_") && !strings.HasSuffix(n, "_test.py") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]int{}
	if len(files) == 0 {
		return out
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 is not on the PATH in CI: the Python function lengths cannot be checked")
		}
		t.Skip("no python3 here: the Python function lengths are not checked")
	}
	cmd := exec.Command(py, "-c", pyLengths)
	cmd.Stdin = strings.NewReader(strings.Join(files, "\n"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python3 reading the Python files' functions: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		n, err := strconv.Atoi(f[len(f)-1])
		if len(f) != 3 || err != nil {
			t.Fatalf("python3 printed %q", sc.Text())
		}
		rel, _ := filepath.Rel(root, f[0])
		key := filepath.ToSlash(rel) + " " + f[1]
		out[key] = max(out[key], n)
	}
	return out
}

// TestFunctionLength fails when a Go function is over 80 lines, a table
// of data excepted.
func TestFunctionLength(t *testing.T) {
	for _, k := range longOnes(funcLengths(t, ".")) {
		t.Errorf("%s: over %d lines; split it (a table of data goes in longTables)", k, maxFuncLines)
	}
}

// TestPythonFunctionLength holds the Python under phases/ and scripts/ to
// the same limit: each def over 80 lines fails, a table of data excepted.
func TestPythonFunctionLength(t *testing.T) {
	for _, k := range longOnes(pyFuncLengths(t, ".")) {
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

// TestPythonFunctionLengthCatches checks the Python scan on a tree with a
// long function, a long method, a long nested function and a long
// decorated one beside a table of data, a short one, and files it leaves
// out (testdata, tests, a folder outside phases/ and scripts/).
func TestPythonFunctionLengthCatches(t *testing.T) {
	root := t.TempDir()
	def := func(indent, name string, lines int) string {
		return indent + "def " + name + "():\n" + strings.Repeat(indent+"    x = 1\n", lines-1)
	}
	files := map[string]string{
		"phases/a/a.py": def("", "short", 80) + def("", "long", 81) + "class T:\n" + def("    ", "method", 91) +
			def("    ", "table", 90) + "def outer():\n" + def("    ", "inner", 85) + "    return inner\n" +
			"@staticmethod\n" + def("", "decorated", 82),
		"scripts/b/b.py":          "async " + def("", "serve", 100),
		"phases/a/testdata/t.py":  def("", "fixture", 200),
		"phases/a/test_a.py":      def("", "test_long", 200),
		"elsewhere/c.py":          def("", "other", 200),
		"phases/a/__init__.py":    "",
		"scripts/b/notpython.txt": def("", "text", 200),
	}
	for name, src := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	saved := longTables
	defer func() { longTables = saved }()
	longTables = map[string]string{"phases/a/a.py T.table": "one entry a line"}
	got := strings.Join(longOnes(pyFuncLengths(t, root)), "\n")
	want := "scripts/b/b.py serve (100 lines)\nphases/a/a.py T.method (91 lines)\nphases/a/a.py outer (87 lines)\n" +
		"phases/a/a.py outer.inner (85 lines)\nphases/a/a.py decorated (82 lines)\nphases/a/a.py long (81 lines)"
	if got != want {
		t.Errorf("long functions:\n%s\nwant:\n%s", got, want)
	}
}
