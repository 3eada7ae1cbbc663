package phases

import "testing"

func TestVariantLaunchReplacesTheSameFlags(t *testing.T) {
	base := "vllm serve m --max-num-seqs 128 --port=8000 --enable-prefix-caching"
	cases := []struct {
		spec VariantSpec
		want string
	}{
		{VariantSpec{Args: []string{"--max-num-seqs 256"}}, "vllm serve m --port=8000 --enable-prefix-caching --max-num-seqs 256"},
		{VariantSpec{Args: []string{"--enable-chunked-prefill"}}, base + " --enable-chunked-prefill"},
		{VariantSpec{Args: []string{"--port=9000", "--max-num-seqs", "64"}}, "vllm serve m --enable-prefix-caching --port=9000 --max-num-seqs 64"},
		{VariantSpec{Launch: "sglang serve x", Args: []string{"--a"}}, "sglang serve x"},
		{VariantSpec{}, base},
	}
	for _, c := range cases {
		if got := VariantLaunch(base, c.spec); got != c.want {
			t.Errorf("%v: got %q, want %q", c.spec, got, c.want)
		}
	}
}
