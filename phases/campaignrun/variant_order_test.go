package campaignrun

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// Variants serving the same launch and environment are served one after
// the other, on one load; an environment of its own, or a whole launch
// equal to another's args, decides as the server it makes.
func TestOrderVariantsSharesLoads(t *testing.T) {
	base := "vllm serve m --port 8000"
	vs := []phases.VariantSpec{
		{Name: "a", Args: []string{"--max-num-seqs 64"}},
		{Name: "b", Args: []string{"--enable-chunked-prefill"}},
		{Name: "c", Launch: "vllm serve m --port 8000 --max-num-seqs 64"},
		{Name: "d", Args: []string{"--max-num-seqs 64"}, Env: map[string]string{"NCCL_ALGO": "ring"}},
		{Name: "e", Args: []string{"--max-num-seqs", "64"}},
	}
	var names []string
	for _, v := range OrderVariants(base, vs) {
		names = append(names, v.Name)
	}
	if got := strings.Join(names, ","); got != "a,c,e,b,d" {
		t.Errorf("order %s, want a,c,e,b,d", got)
	}
	if n := VariantLoads(base, vs); n != 3 {
		t.Errorf("%d loads, want 3 (a c e; b; d)", n)
	}
	if SharesLoad(base, nil, vs[0]) || !SharesLoad(base, &vs[0], vs[4]) || SharesLoad(base, &vs[0], vs[3]) {
		t.Error("SharesLoad: a shares with nothing before it, e with a, d (its own environment) with none")
	}
}
