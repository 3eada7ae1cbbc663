package campaign

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
)

// aliasFlags is a flag set with the sweep's aliased flags, as typed.
func aliasFlags(binds []Flag) *flag.FlagSet {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("concurrency", "", "")
	fs.Int("requests", 0, "")
	fs.Float64("rate", 0, "")
	fs.Int("input-len", 0, "")
	fs.Int("output-len", 0, "")
	fs.Float64("range-ratio", 0, "")
	fs.String("dataset", "", "")
	fs.String("dataset-file", "", "")
	DefineAliases(fs, binds...)
	return fs
}

var aliasBinds = []Flag{
	{Name: "concurrency", Key: "macro.concurrency"}, Flag{Name: "requests", Key: "macro.requests"},
	Flag{Name: "rate", Key: "macro.rate"}, Flag{Name: "input-len", Key: "macro.input_len"},
	Flag{Name: "output-len", Key: "macro.output_len"}, Flag{Name: "range-ratio", Key: "macro.range_ratio"},
	Flag{Name: "dataset", Key: "macro.dataset"}, Flag{Name: "dataset-file", Key: "macro.dataset_file"}}

// Every vllm bench serve alias sets its key exactly as its flag does, over
// the same file, zero values included.
func TestBenchAliasesActAsTheirFlag(t *testing.T) {
	file := "macro:\n  concurrency: [1, 2]\n  requests: 9\n  rate: 3\n  input_len: 100\n  output_len: 50\n  range_ratio: 0.2\n  dataset: random\n"
	cases := []struct{ flag, alias, value string }{
		{"concurrency", "max-concurrency", "8"},
		{"concurrency", "max-concurrency", "1,4,16"},
		{"requests", "num-prompts", "16"},
		{"requests", "num-prompts", "0"},
		{"rate", "request-rate", "2.5"},
		{"rate", "request-rate", "inf"},
		{"rate", "request-rate", "0"},
		{"input-len", "random-input-len", "128"},
		{"output-len", "random-output-len", "0"},
		{"range-ratio", "random-range-ratio", "0"},
		{"dataset", "dataset-name", "sharegpt"},
		{"dataset-file", "dataset-path", "/tmp/x.json"},
	}
	for _, tc := range cases {
		apply := func(name string) (*Campaign, error) {
			c, err := Parse([]byte(file))
			if err != nil {
				t.Fatal(err)
			}
			fs := aliasFlags(aliasBinds)
			if err := fs.Parse([]string{"--" + name, tc.value}); err != nil {
				t.Fatalf("--%s %s: %v", name, tc.value, err)
			}
			return c, c.ApplyFlags(fs, aliasBinds...)
		}
		byFlag, err1 := apply(tc.flag)
		byAlias, err2 := apply(tc.alias)
		if (err1 == nil) != (err2 == nil) {
			t.Errorf("--%s %s: flag err %v, alias err %v", tc.alias, tc.value, err1, err2)
			continue
		}
		if !reflect.DeepEqual(byFlag.Macro, byAlias.Macro) {
			t.Errorf("--%s %s: alias gives %+v, flag gives %+v", tc.alias, tc.value, byAlias.Macro, byFlag.Macro)
		}
		for _, key := range []string{"macro.requests", "macro.duration"} {
			if strings.TrimPrefix(byAlias.Source(key), "--"+tc.alias) != strings.TrimPrefix(byFlag.Source(key), "--"+tc.flag) {
				t.Errorf("--%s: %s source %q, flag's %q", tc.alias, key, byAlias.Source(key), byFlag.Source(key))
			}
		}
	}
}

// inf, vLLM's default request rate (all at once), is a concurrency sweep.
func TestBenchAliasInfRate(t *testing.T) {
	c := Defaults()
	fs := aliasFlags(aliasBinds)
	if err := fs.Parse([]string{"--request-rate", "inf"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(fs, aliasBinds...); err != nil || c.Macro.Rate != 0 || c.Source("macro.rate") != "--request-rate" {
		t.Errorf("rate %v source %q err %v", c.Macro.Rate, c.Source("macro.rate"), err)
	}
}

// A flag and its alias both given is one clear error naming both.
func TestBenchAliasWithItsFlag(t *testing.T) {
	fs := aliasFlags(aliasBinds)
	if err := fs.Parse([]string{"--concurrency", "1,2", "--max-concurrency", "8"}); err != nil {
		t.Fatal(err)
	}
	err := Defaults().ApplyFlags(fs, aliasBinds...)
	if err == nil || err.Error() != "--concurrency and --max-concurrency are the same flag (macro.concurrency): give one" {
		t.Errorf("err %v", err)
	}
}
