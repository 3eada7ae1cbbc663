package campaign

import (
	"fmt"
	"reflect"
	"sort"
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
	if reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() != reflect.Struct {
		return nil
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
