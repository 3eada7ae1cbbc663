package remote

import "testing"

func TestScrubSecrets(t *testing.T) {
	cases := map[string]string{
		"vllm serve m --api-key abc123 --max-num-batched-tokens 8192": "vllm serve m --api-key [redacted] --max-num-batched-tokens 8192",
		"HF_TOKEN=hf_xyz vllm serve m --tokenizer t":                  "HF_TOKEN=[redacted] vllm serve m --tokenizer t",
		"vllm serve m --api-key='a b' --port 8000":                    "vllm serve m --api-key=[redacted] --port 8000",
		"curl -H 'Authorization: Bearer tok123' x":                    "curl -H 'Authorization: Bearer [redacted]' x",
		"VLLM_API_KEY=k OPENAI_API_KEY=\"q\" MAX_TOKENS=5 run":        "VLLM_API_KEY=[redacted] OPENAI_API_KEY=[redacted] MAX_TOKENS=5 run",
		// the launch commands the load engine shows
		`env HF_TOKEN='hf_abc def' VLLM_TORCH_PROFILER_DIR=/p vllm serve m --api-key sk-123 --hf-token=hf_x --port 8000`: `env HF_TOKEN=[redacted] VLLM_TORCH_PROFILER_DIR=/p vllm serve m --api-key [redacted] --hf-token=[redacted] --port 8000`,
		// names with the secret word inside, or KEY alone
		"AWS_SECRET_ACCESS_KEY=abc WANDB_KEY=w HF_TOKEN_X=t run": "AWS_SECRET_ACCESS_KEY=[redacted] WANDB_KEY=[redacted] HF_TOKEN_X=[redacted] run",
		// flags and log text only one of the two former scrubbers caught
		"vllm serve m --password pw --ssl-secret=s --token t": "vllm serve m --password [redacted] --ssl-secret=[redacted] --token [redacted]",
		"vllm serve m --api-key= sk-1 --port 8000":            "vllm serve m --api-key= [redacted] --port 8000",
		"non-default args: {'model': 'm', 'api_key': 'k9'}":   "non-default args: {'model': 'm', 'api_key': '[redacted]'}",
		"--load-url http://bench:pw@host:8000/v1":             "--load-url http://xxxxx@host:8000/v1",
		"tokens: max_tokens=5 --max-model-len 4096":           "tokens: max_tokens=5 --max-model-len 4096",
		// vLLM's own forms: a list of keys in its non-default args, and a
		// Namespace as older versions print it
		"non-default args: {'model': 'm', 'api_key': ['sk-a1', 'sk-b2'], 'port': 8000}": "non-default args: {'model': 'm', 'api_key': ['[redacted]'], 'port': 8000}",
		"args: Namespace(api_key=['k1', 'k2'], hf_token='t9', port=8000)":               "args: Namespace(api_key=['[redacted]'], hf_token=[redacted], port=8000)",
		// a server's error that echoes a key of a well-known shape
		`{"error": "Incorrect API key provided: sk-proj-AbCdEf0123456789xyz"}`: `{"error": "Incorrect API key provided: [redacted]"}`,
		"token hf_AbCdEfGhIjKlMnOpQrStUv refused":                              "token [redacted] refused",
	}
	for in, want := range cases {
		if got := ScrubSecrets(in); got != want {
			t.Errorf("ScrubSecrets(%q)\n got %q\nwant %q", in, got, want)
		}
		// Scrubbed text passes through again unchanged (the journal scrubs
		// what an engine scrubbed already).
		if again := ScrubSecrets(want); again != want {
			t.Errorf("ScrubSecrets twice on %q\n got %q", want, again)
		}
	}
}

// A known secret (the key in use) is hidden wherever it stands, whatever
// its shape; a too short one is left alone rather than blank out words.
func TestScrubKnownSecrets(t *testing.T) {
	body := `{"error": "invalid key PlantedKey5526 (expected another)"}`
	if got := ScrubSecrets(body, "PlantedKey5526", ""); got != `{"error": "invalid key [redacted] (expected another)"}` {
		t.Errorf("got %s", got)
	}
	if got := ScrubSecrets("a b c", "a"); got != "a b c" {
		t.Errorf("a one-letter known secret changed the text: %s", got)
	}
}
