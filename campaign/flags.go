package campaign

import (
	"flag"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases/units"
)

// This file is the one place where command-line flags are applied over the
// campaign. A flag given on the command line wins over the file and the
// defaults whatever its value (0, "" and false included): which flags were
// given is asked of the flag set (flag.FlagSet.Visit), never guessed from
// the value. The key a flag set remembers the flag, so that validation
// names the flag rather than the file's line.

// Flag binds a command-line flag to the campaign key it overrides.
type Flag struct {
	Name string // the flag, without dashes (e.g. warmup)
	Key  string // the dotted YAML key (e.g. macro.warmup)
}

// ApplyFlags sets the key of every bound flag given on the command line to
// the flag's value. A flag bound to no key, or not given, changes nothing.
// --requests and --duration are one choice (levelBounds).
func (c *Campaign) ApplyFlags(fs *flag.FlagSet, binds ...Flag) error {
	byName := map[string]string{}
	for _, b := range binds {
		byName[b.Name] = b.Key
		for _, a := range BenchAliases[b.Name] {
			byName[a] = b.Key // an alias defined in fs (DefineAliases) sets the same key
		}
	}
	var err error
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		key, ok := byName[f.Name]
		if !ok || err != nil {
			return
		}
		if set[key] {
			err = fmt.Errorf("%s and --%s are the same flag (%s): give one", c.setBy[key], f.Name, key)
			return
		}
		set[key] = true
		value := f.Value.String()
		if key == "macro.rate" && isInf(value) {
			value = "0" // vLLM's default rate, inf: all at once, a concurrency sweep
		}
		if e := c.SetKey(key, value); e != nil {
			err = fmt.Errorf("--%s: %w", f.Name, e)
			return
		}
		c.SetBy(key, "--"+f.Name)
	})
	if err != nil {
		return err
	}
	c.levelBounds(set["macro.requests"], set["macro.duration"])
	return nil
}

// levelBounds applies the flags of the pair that ends a level (req, dur:
// which of --requests and --duration were given). A count or a time given
// alone is the level's one bound: the file's other bound is dropped. A 0
// given alone drops its own bound only, as `requests: 0` or `duration: 0`
// in the file would: --duration 0 leaves the file's request count (the
// default count where the file's time budget had replaced it), --requests
// 0 the file's duration. Both given stand as given.
func (c *Campaign) levelBounds(req, dur bool) {
	m := &c.Macro
	switch {
	case req == dur:
	case dur && m.Duration.Duration > 0:
		m.Requests = 0
		c.SetBy("macro.requests", c.setBy["macro.duration"])
	case dur && m.Requests == 0 && lineOf(c.root, "macro.requests") == 0:
		m.Requests = DefaultRequests
	case req && m.Requests > 0:
		m.Duration.Duration = 0
		c.SetBy("macro.duration", c.setBy["macro.requests"])
	}
}

// isInf reports whether s is an infinite number (inf, +Inf).
func isInf(s string) bool {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil && math.IsInf(x, 1)
}

// SetBy records that source (a flag, e.g. "--warmup") set key, so that a
// problem with its value names the flag.
func (c *Campaign) SetBy(key, source string) {
	if c.setBy == nil {
		c.setBy = map[string]string{}
	}
	c.setBy[key] = source
}

// Source is what set key: the flag that set it, else "line N" of the
// file, else "" (a default).
func (c *Campaign) Source(key string) string {
	if s := c.setBy[key]; s != "" {
		return s
	}
	if l := lineOf(c.root, key); l > 0 {
		return fmt.Sprintf("line %d", l)
	}
	return ""
}

// SetKey sets the dotted YAML key (e.g. "macro.warmup") to the value
// written as text, read as the key's type: a whole number, a number,
// true/false, a duration ("90s"), a comma-separated list of whole numbers,
// or text.
func (c *Campaign) SetKey(key, value string) error {
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(key, ".") {
		f, ok := fieldByTag(v, part)
		if !ok {
			return fmt.Errorf("%s is not a campaign key", key)
		}
		v = f
	}
	return setText(v, value)
}

// fieldByTag is the field of struct v whose yaml tag is name.
func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag == name && tag != "-" {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

var durationType = reflect.TypeOf(Duration{})

// setText sets v, one of the campaign's value types, from text.
func setText(v reflect.Value, s string) error {
	if t, ok := v.Addr().Interface().(interface{ SetText(string) error }); ok {
		return t.SetText(s)
	}
	if v.Type() == durationType {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a duration (e.g. 90s, 5m)", s)
		}
		v.Set(reflect.ValueOf(Duration{d}))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	case reflect.Int:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		v.SetInt(int64(n))
	case reflect.Float64:
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(x)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Int {
			return fmt.Errorf("a %s cannot be set from a flag", v.Type())
		}
		list, err := units.ParseInts(s, math.MinInt, math.MaxInt) // the key's range is its validation's
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(list))
	default:
		return fmt.Errorf("a %s cannot be set from a flag", v.Type())
	}
	return nil
}

// BenchAliases are `vllm bench serve`'s names of the sweep's flags, by
// the flag they stand for. An alias defined in a flag set (DefineAliases)
// sets its flag's key exactly as the flag does; giving both is an error.
var BenchAliases = map[string][]string{
	"concurrency":  {"max-concurrency"},
	"requests":     {"num-prompts"},
	"rate":         {"request-rate"},
	"input-len":    {"random-input-len"},
	"output-len":   {"random-output-len"},
	"range-ratio":  {"random-range-ratio"},
	"dataset":      {"dataset-name"},
	"dataset-file": {"dataset-path"},
	"prefix-len":   {"random-prefix-len"},
}

// DefineAliases adds each bound flag's aliases to fs, sharing the flag's
// value, so that an alias parses, defaults and applies exactly as its
// flag. The flags themselves must be defined first.
func DefineAliases(fs *flag.FlagSet, binds ...Flag) {
	for _, b := range binds {
		f := fs.Lookup(b.Name)
		if f == nil {
			continue
		}
		for _, a := range BenchAliases[b.Name] {
			if fs.Lookup(a) == nil {
				fs.Var(f.Value, a, "vllm bench serve's name for --"+b.Name)
			}
		}
	}
}
