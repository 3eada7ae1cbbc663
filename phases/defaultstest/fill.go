package defaultstest

import (
	"fmt"
	"reflect"
)

// Fill sets each field of *cfg that table names and that *cfg leaves
// unset (zero, or an empty list) to table's value, a list copied; a value
// given, valid or not, is kept. It panics when cfg is not a pointer to a
// struct or lacks a field table names: a table out of step with its
// engine is a broken test.
func Fill(cfg, table any) {
	dst := reflect.ValueOf(cfg)
	if dst.Kind() != reflect.Pointer || dst.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("defaultstest.Fill: %T is not a pointer to a configuration", cfg))
	}
	dst = dst.Elem()
	src := reflect.ValueOf(table)
	for i := range src.NumField() {
		name := src.Type().Field(i).Name
		f := dst.FieldByName(name)
		if !f.IsValid() {
			panic(fmt.Sprintf("defaultstest.Fill: %s has no field %s", dst.Type(), name))
		}
		if unset(f) {
			f.Set(valueAs(src.Field(i), f.Type()))
		}
	}
}

// Differences lists, one line each, every field table names whose value
// in cfg (an engine configuration, or a pointer to one) is not table's,
// or that cfg lacks.
func Differences(cfg, table any) []string {
	got := reflect.Indirect(reflect.ValueOf(cfg))
	want := reflect.ValueOf(table)
	var out []string
	for i := range want.NumField() {
		name := want.Type().Field(i).Name
		f := got.FieldByName(name)
		switch {
		case !f.IsValid():
			out = append(out, fmt.Sprintf("%s: %s has no such field", name, got.Type()))
		case !want.Field(i).Type().ConvertibleTo(f.Type()):
			out = append(out, fmt.Sprintf("%s: the table's %s is not the configuration's %s", name, want.Field(i).Type(), f.Type()))
		case !reflect.DeepEqual(f.Interface(), valueAs(want.Field(i), f.Type()).Interface()):
			out = append(out, fmt.Sprintf("%s: the configuration has %v, the test table %v", name, f.Interface(), want.Field(i).Interface()))
		}
	}
	return out
}

// unset is a zero value or an empty list.
func unset(v reflect.Value) bool {
	return v.IsZero() || (v.Kind() == reflect.Slice && v.Len() == 0)
}

// valueAs is v converted to type t, a list copied so that a test that
// changes its configuration's list leaves the table as it is.
func valueAs(v reflect.Value, t reflect.Type) reflect.Value {
	if v.Kind() == reflect.Slice {
		c := reflect.MakeSlice(t, v.Len(), v.Len())
		reflect.Copy(c, v)
		return c
	}
	return v.Convert(t)
}
