package headless

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/campaign"
)

// referencePath is the generated page, from this package's folder.
const referencePath = "../../docs/reference.md"

// regenerate is the command that writes the page again.
const regenerate = "go generate ./ui/headless"

// referenceCommands are the commands whose flags the page lists, in its
// order: each one's flag set and its flags bound to campaign keys (every
// command that reads the campaign binds --host to host as well).
var referenceCommands = []struct {
	name  string
	binds []campaign.Flag
}{
	{"run", runBinds}, {"doctor", nil}, {"sweep", sweepBinds}, {"load", loadBinds},
	{"micro", microBinds}, {"nccl", ncclBinds}, {"profile", profileBinds},
	{"capacity", capacityBinds}, {"tail", tailBinds},
}

func TestReferencePageIsCurrent(t *testing.T) {
	want, err := referencePage()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("PROFDECK_WRITE_REFERENCE") == "1" {
		if err := os.WriteFile(referencePath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(referencePath)
	if err != nil || string(got) != want {
		t.Fatalf("docs/reference.md is not what the campaign's keys and the commands' flags give (%s): write it again with: %s\nfirst difference: %s",
			errOrDiff(err), regenerate, firstDiff(string(got), want))
	}
}

func errOrDiff(err error) string {
	if err != nil {
		return err.Error()
	}
	return "it differs"
}

// firstDiff is the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: page %q, code %q", i+1, a, b)
		}
	}
	return "none"
}

// The page follows the binds: a flag no longer bound to its key leaves
// the key's row and the flag's.
func TestReferencePageFollowsTheBinds(t *testing.T) {
	before, err := referencePage()
	if err != nil {
		t.Fatal(err)
	}
	saved := referenceCommands[2].binds
	defer func() { referenceCommands[2].binds = saved }()
	var without []campaign.Flag
	for _, b := range saved {
		if b.Name != "warmup" {
			without = append(without, b)
		}
	}
	referenceCommands[2].binds = without
	after, err := referencePage()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| `macro.warmup` | whole number | `4` | `sweep --warmup` |", "| `--warmup` | int |  | `macro.warmup` |"} {
		if !strings.Contains(before, row) || strings.Contains(after, row) {
			t.Errorf("row %q: on the page %v, still there without the bind %v", row, strings.Contains(before, row), strings.Contains(after, row))
		}
	}
}

// referencePage is the page's text.
func referencePage() (string, error) {
	docs, err := fieldDocs("../../campaign")
	if err != nil {
		return "", err
	}
	setBy := map[string][]string{}
	flagDoc := map[string]string{} // a key's first flag's help, for a key with no comment
	var flags strings.Builder
	for _, rc := range referenceCommands {
		fs := flagCommands[rc.name].flags()
		keys := boundKeys(fs, rc.binds)
		names := make([]string, 0, len(keys))
		for name := range keys {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			key := keys[name]
			setBy[key] = append(setBy[key], "`"+rc.name+" --"+name+"`")
			if _, usage := flag.UnquoteUsage(fs.Lookup(name)); flagDoc[key] == "" && !strings.HasPrefix(usage, "vllm bench serve's name") {
				flagDoc[key] = usage
			}
		}
		writeFlags(&flags, rc.name, fs, keys)
	}
	var b strings.Builder
	b.WriteString("# Reference: campaign keys and flags\n\n")
	b.WriteString("<!-- Written by `" + regenerate + "` from the campaign's types and the commands' flags: edit those, not this page. -->\n\n")
	b.WriteString("Every key of the campaign file and every flag of the headless commands, as the code defines them. A flag\n")
	b.WriteString("that sets a campaign key wins over the file when it is given ([flags over the campaign](campaign.md#the-campaign-file));\n")
	b.WriteString("`profdeck CMD -h` prints the same flags. The other commands (`demo`, `tui`, `init`, `report`, `compare`,\n")
	b.WriteString("`explain`, `parse`) are in [commands](commands.md).\n\n")
	b.WriteString("- [Campaign keys](#campaign-keys)\n")
	for _, rc := range referenceCommands {
		fmt.Fprintf(&b, "- [`profdeck %s`](#profdeck-%s)\n", rc.name, rc.name)
	}
	b.WriteString("\n## Campaign keys\n\n| key | type | default | flags | what it is |\n|---|---|---|---|---|\n")
	for _, k := range campaignKeys(reflect.ValueOf(campaign.Defaults()).Elem(), "", docs) {
		sort.Strings(setBy[k.key])
		if k.doc == "" {
			k.doc = flagDoc[k.key]
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.key, k.typ, code(k.def), strings.Join(setBy[k.key], ", "), cell(k.doc))
	}
	b.WriteString(flags.String())
	return b.String(), nil
}

// boundKeys maps each flag of fs that sets a campaign key to the key, the
// aliases of `vllm bench serve` included.
func boundKeys(fs *flag.FlagSet, binds []campaign.Flag) map[string]string {
	keys := map[string]string{}
	for _, b := range append(binds, campaign.Flag{Name: "host", Key: "host"}) {
		for _, name := range append([]string{b.Name}, campaign.BenchAliases[b.Name]...) {
			if fs.Lookup(name) != nil {
				keys[name] = b.Key
			}
		}
	}
	return keys
}

func writeFlags(b *strings.Builder, name string, fs *flag.FlagSet, keys map[string]string) {
	fmt.Fprintf(b, "\n## `profdeck %s`\n\n| flag | type | default | key | what it does |\n|---|---|---|---|---|\n", name)
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		def := f.DefValue
		if def == "0" || def == "false" || def == "0s" {
			def = ""
		}
		key := ""
		if k := keys[f.Name]; k != "" {
			key = "`" + k + "`"
		}
		fmt.Fprintf(b, "| `%s%s` | %s | %s | %s | %s |\n", dash, f.Name, typ, code(def), key, cell(usage))
	})
}

// code is s as inline code, or nothing when s is empty.
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// cell is text fit for a table cell: one line, its bars escaped.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

type keyRow struct{ key, typ, def, doc string }

var durationType = reflect.TypeOf(campaign.Duration{})

// campaignKeys are the keys of struct v (the defaults) under prefix, in
// the order the types declare them.
func campaignKeys(v reflect.Value, prefix string, docs map[string]string) []keyRow {
	var rows []keyRow
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		key := prefix + name
		fv := v.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			rows = append(rows, campaignKeys(fv, key+".", docs)...)
			continue
		}
		rows = append(rows, keyRow{key, typeName(f.Type), valueText(fv), docs[t.Name()+"."+f.Name]})
	}
	return rows
}

func typeName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Int:
		return "whole number"
	case reflect.Float64:
		return "number"
	case reflect.Bool:
		return "true/false"
	case reflect.String:
		return "text"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "list of entries" // each with the keys its row names
		}
		return "list of " + typeName(t.Elem()) + "s"
	case reflect.Map:
		return "map of text"
	}
	return t.String()
}

func valueText(v reflect.Value) string {
	if v.Type() == durationType {
		if d := v.Interface().(campaign.Duration); d.Duration != 0 {
			return d.String()
		}
		return ""
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Map:
		return ""
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		if len(parts) == 0 {
			return ""
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Bool:
		if !v.Bool() {
			return ""
		}
	case reflect.Int, reflect.Float64:
		if v.IsZero() {
			return ""
		}
	}
	return fmt.Sprint(v.Interface())
}

// fieldDocs are the comments on the campaign's struct fields, by
// "Type.Field": the field's doc comment, else its line comment.
func fieldDocs(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, fl := range st.Fields.List {
					text := strings.TrimSpace(fl.Doc.Text())
					if text == "" {
						text = strings.TrimSpace(fl.Comment.Text())
					}
					for _, n := range fl.Names {
						docs[ts.Name.Name+"."+n.Name] = text
					}
				}
			}
			return false
		})
	}
	return docs, nil
}
