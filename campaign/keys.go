package campaign

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// checkKeys rejects keys the campaign does not have, naming the key, its
// line, and the keys that section does have.
func checkKeys(root *yaml.Node) error {
	n := root
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	return checkNode(n, reflect.TypeOf(Campaign{}), "")
}

func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for _, item := range n.Content {
				if err := checkNode(item, t.Elem(), path); err != nil {
					return err
				}
			}
		}
		return nil
	default:
		return checkNumber(n, t, path)
	}
	if n.Kind != yaml.MappingNode {
		return nil // a wrong kind of value: the decoder says so with the line
	}
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fields[name] = f
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		f, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			sort.Strings(known)
			where := "at the top level"
			if path != "" {
				where = "in section " + path
			}
			return fmt.Errorf("line %d: unknown key %s (the keys %s are: %s)", k.Line, key, where, strings.Join(known, ", "))
		}
		if err := checkNode(v, f.Type, key); err != nil {
			return err
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// keyAt returns the dotted key of the deepest setting written on line, or
// "" when none is.
func keyAt(root *yaml.Node, line int) string {
	n := root
	if n == nil {
		return ""
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	return keyAtNode(n, line, "")
}

func keyAtNode(n *yaml.Node, line int, path string) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	best := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		if k.Line == line {
			best = key
		}
		if deeper := keyAtNode(v, line, key); deeper != "" {
			return deeper
		}
		if v.Kind == yaml.SequenceNode {
			for _, item := range v.Content {
				if item.Line == line {
					return key
				}
			}
		}
		if v.Line == line && best == "" {
			best = key
		}
	}
	return best
}

// checkNumber refuses what the decoder would take silently or describe
// badly: a fraction where a whole number is wanted (8.5 would become 8),
// and a quoted number ("8"), which is text.
func checkNumber(n *yaml.Node, t reflect.Type, key string) error {
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	whole := false
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		whole = true
	case reflect.Float32, reflect.Float64:
	default:
		return nil
	}
	want := "a number"
	if whole {
		want = "a whole number"
	}
	tag := n.ShortTag()
	switch {
	case tag == "!!float" && whole:
		return fmt.Errorf("line %d: %s: %s is not a whole number", n.Line, key, n.Value)
	case tag == "!!str" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		if _, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64); err == nil {
			return fmt.Errorf("line %d: %s: %q is quoted, so it is text; want %s (write %s without quotes)", n.Line, key, n.Value, want, strings.TrimSpace(n.Value))
		}
		return fmt.Errorf("line %d: %s: %q is text; want %s", n.Line, key, n.Value, want)
	}
	return nil
}
