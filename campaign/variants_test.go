package campaign

import (
	"strings"
	"testing"
)

const variantsYAML = `host: sim
server:
  launch: vllm serve m --max-num-seqs 128
variants:
  - name: chunked
    args: [--enable-chunked-prefill]
  - matrix: {--max-num-seqs: [64, 256]}
  - name: other
    launch: vllm serve m --tensor-parallel-size 2
    env: {VLLM_X: "1"}
run:
  variant_steps: [macro]
`

func TestVariantsExpandTheMatrixAndKeepTheirOrder(t *testing.T) {
	c, err := Parse([]byte(variantsYAML))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.VariantSpecs() {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "chunked max-num-seqs-64 max-num-seqs-256 other" {
		t.Fatalf("variants %q", got)
	}
	if a := c.VariantSpecs()[2].Args; len(a) != 1 || a[0] != "--max-num-seqs 256" {
		t.Errorf("matrix args %q", a)
	}
	if s := c.Run.StepsOfVariants(); strings.Join(s, ",") != "macro" {
		t.Errorf("steps %v", s)
	}
	if s := Defaults().Run.StepsOfVariants(); strings.Join(s, ",") != "macro" {
		t.Errorf("default steps %v", s)
	}
}

func TestVariantsMatrixOfTwoFlagsIsEveryCombination(t *testing.T) {
	got := matrixArgs(map[string][]string{"--b": {"1", "2"}, "--a": {"x", "y"}})
	if len(got) != 4 || matrixName("v", got[3]) != "v-a-y-b-2" {
		t.Fatalf("combinations %q", got)
	}
}

func TestVariantsRefusedOneLineEach(t *testing.T) {
	cases := map[string]string{
		"variants:\n  - args: [--x]\n":                                            "line 5: variants[0]: each variant needs a name",
		"variants:\n  - name: baseline\n    args: [--x]\n":                        "is the campaign's own launch",
		"variants:\n  - name: a b\n    args: [--x]\n":                             "letters, digits",
		"variants:\n  - name: a\n":                                                "changes nothing",
		"variants:\n  - name: a\n    args: [x]\n":                                 `"x": args are flags`,
		"variants:\n  - name: a\n    launch: l\n    args: [--x]\n":                "goes without args",
		"variants:\n  - matrix: {max: [1]}\n":                                     "each key is one flag",
		"variants:\n  - name: a\n    env: {A: b}\n  - name: a\n    env: {A: c}\n": `two variants are named "a"`,
		"run:\n  variant_steps: [sweep]\n":                                        `run.variant_steps: "sweep": each is one of`,
		"run:\n  variant_steps: [macro, micro]\n":                                 `run.variant_steps: "micro": each is one of macro, profile`,
	}
	for y, want := range cases {
		c, err := Parse([]byte("host: sim\nserver:\n  launch: vllm serve m\n" + y))
		if err == nil {
			t.Errorf("%q: accepted", y)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want %q", y, err, want)
		}
		_ = c
	}
}
