package macro

// Definition is one metric as profdeck measures it, beside vLLM's
// (vllm bench serve) definition of it.
type Definition struct {
	Profdeck string `json:"profdeck"`
	VLLM     string `json:"vllm"`
}

// Definitions is the result document's `definitions` object.
type Definitions struct {
	TTFT         Definition `json:"ttft"`
	TTFB         Definition `json:"ttfb"`
	E2EL         Definition `json:"e2el"`
	TPOT         Definition `json:"tpot"`
	ITL          Definition `json:"itl"`
	ITLChunk     Definition `json:"itl_chunk"`
	OutputTokens Definition `json:"output_tokens"`
	InputTokens  Definition `json:"input_tokens"`
	Throughput   Definition `json:"output_throughput"`
	LatencyFrom  Definition `json:"latency_from"`
}

var definitions = Definitions{
	TTFT: Definition{
		Profdeck: "send to the first chunk that carries generated text (never the role-only chat chunk)",
		VLLM:     "send to the first chunk with choices (for chat, the role-only chunk): profdeck's ttfb is the nearer match",
	},
	TTFB: Definition{
		Profdeck: "send to the response's headers (median_ttfb_ms)",
		VLLM:     "not reported; its TTFT is the first chunk with choices, which vLLM sends at once",
	},
	E2EL: Definition{
		Profdeck: "send to the response's last chunk: the one with finish_reason, else [DONE]",
		VLLM:     "send to the last chunk with choices (the finish_reason chunk)",
	},
	TPOT: Definition{
		Profdeck: "(E2EL - TTFT) / (output tokens - 1), per request",
		VLLM:     "the same",
	},
	ITL: Definition{
		Profdeck: "per token: each gap between text chunks divided over the tokens the later chunk carried (*_itl_ms)",
		VLLM:     "per chunk: the gaps between chunks with choices; profdeck reports these as *_itl_chunk_ms",
	},
	ITLChunk: Definition{
		Profdeck: "the gaps between consecutive chunks with choices (role-only and finish-only chunks included)",
		VLLM:     "its ITL",
	},
	OutputTokens: Definition{
		Profdeck: "usage.completion_tokens; without usage the server's /tokenize on the received text, else one per chunk (token_source, warnings)",
		VLLM:     "usage.completion_tokens; without usage, the received text re-tokenized on the client",
	},
	InputTokens: Definition{
		Profdeck: "usage.prompt_tokens; without it the prompt length as sized (input_token_source, warnings)",
		VLLM:     "the prompt's length from its own tokenizer",
	},
	LatencyFrom: Definition{
		Profdeck: "TTFT and E2EL start at the request's actual send (latency_from sent, the default) or at its intended send time " +
			"(--latency-from intended: the coordinated-omission correction, a late client's wait counted); TPOT and ITL do not change",
		VLLM: "at the actual send; no correction for a client that sent late",
	},
	Throughput: Definition{
		Profdeck: "closed loop: tokens received while C were in flight over that window (throughput_window in_flight); open loop: as vLLM",
		VLLM:     "measured requests' output tokens over the benchmark's duration",
	},
}
