package phases

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// kindWords spells the words of wire kinds that CamelCase would get wrong:
// initialisms, and a word written as one on the wire.
var kindWords = map[string]string{
	"gpu": "GPU", "gemm": "GEMM", "nccl": "NCCL", "slo": "SLO", "rtt": "RTT", "alltoall": "AllToAll",
}

// kindName is the constant name a wire kind must have: "Kind" and the
// CamelCase of its words ("macro.level_started" → KindMacroLevelStarted).
func kindName(wire string) string {
	var b strings.Builder
	b.WriteString("Kind")
	for _, w := range strings.FieldsFunc(wire, func(r rune) bool { return r == '.' || r == '_' }) {
		if s, ok := kindWords[w]; ok {
			b.WriteString(s)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// kindConsts reads every exported Kind… string constant declared in this
// package's files: name → wire string.
func kindConsts(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Kind") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal", fset.Position(name.Pos()), name.Name)
						continue
					}
					wire, _ := strconv.Unquote(lit.Value)
					consts[name.Name] = wire
				}
			}
		}
	}
	return consts
}

// Each event kind constant is named as its wire string, so that the name
// read in the code is the kind read in a journal; and every registered kind
// has such a constant.
func TestKindConstantsNamedAsOnTheWire(t *testing.T) {
	if got := kindName("macro.level_started"); got != "KindMacroLevelStarted" {
		t.Fatalf("kindName(macro.level_started) = %s", got)
	}
	if got := kindName("load.gpu_coarse"); got != "KindLoadGPUCoarse" {
		t.Fatalf("kindName(load.gpu_coarse) = %s", got)
	}
	consts := kindConsts(t)
	wires := map[string]bool{}
	for name, wire := range consts {
		wires[wire] = true
		if want := kindName(wire); name != want {
			t.Errorf("%s is %q on the wire: name it %s", name, wire, want)
		}
	}
	for _, k := range Kinds() {
		if !wires[k] {
			t.Errorf("kind %q is registered without a Kind constant in package phases", k)
		}
	}
}
