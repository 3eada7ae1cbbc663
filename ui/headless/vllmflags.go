package headless

import (
	"flag"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/campaign"
)

// This file takes a `vllm bench serve` command line as the sweep's: the
// flags of vLLM's that mean something here are rewritten to the sweep's
// own (--backend and --endpoint to --api, --goodput to --slo, --base-url
// and --port to --url, …) or kept for the result (--metadata,
// --result-dir, --save-detailed); one that means nothing here is said in
// one line (ignored: --foo: why) and the run goes on. vLLM's abbreviations
// (--random-input for --random-input-len) and underscores (--num_prompts)
// are taken as argparse takes them.

// vllmFlag is one of vllm bench serve's flags besides the aliases of the
// sweep's flags (campaign.BenchAliases).
type vllmFlag struct {
	// n is how many values it takes: 0 (a switch), 1, or many (one or
	// more, until the next flag: argparse's nargs).
	n int
	// set applies its values; nil: it means nothing here, and why says so.
	set func(v *vllmArgs, vals []string) error
	why string
}

const many = -1

// vllmArgs is what a vllm bench serve line asked beyond the sweep's flags.
type vllmArgs struct {
	out       []string // the sweep's flags the vLLM ones became
	ignored   []string // one line each
	metadata  map[string]string
	resultDir string
	detailed  bool // --save-detailed: the per-request records too
	host      string
	port      string
	baseURL   string
	sim       bool // --host sim was given: the emulator's address stands
}

// vllmSampling is why the sampling flags mean nothing here.
const vllmSampling = "requests are sent with temperature 0 and ignore_eos, so that every output has its asked length"

// vllmFlags are vllm bench serve's flags the sweep knows (vllm/benchmarks/serve.py and datasets.py).
var vllmFlags = map[string]vllmFlag{
	"backend":           {n: 1, set: vllmBackend},
	"endpoint-type":     {n: 1, set: vllmBackend},
	"endpoint":          {n: 1, set: vllmEndpoint},
	"base-url":          {n: 1, set: func(v *vllmArgs, s []string) error { v.baseURL = s[0]; return nil }},
	"port":              {n: 1, set: func(v *vllmArgs, s []string) error { v.port = s[0]; return nil }},
	"served-model-name": {n: 1, set: func(v *vllmArgs, s []string) error { v.out = append(v.out, "--model", s[0]); return nil }},
	"goodput":           {n: many, set: vllmGoodput},
	"num-warmups":       {n: 1, set: func(v *vllmArgs, s []string) error { v.out = append(v.out, "--warmup", s[0]); return nil }},
	"metadata":          {n: many, set: vllmMetadata},
	"label":             {n: 1, set: func(v *vllmArgs, s []string) error { v.meta("label", s[0]); return nil }},
	"result-dir":        {n: 1, set: func(v *vllmArgs, s []string) error { v.resultDir = s[0]; return nil }},
	"save-detailed":     {n: 0, set: func(v *vllmArgs, _ []string) error { v.detailed = true; return nil }},
	"save-result":       {n: 0, set: func(*vllmArgs, []string) error { return nil }}, // the result is kept anyway
	"ignore-eos":        {n: 0, set: func(*vllmArgs, []string) error { return nil }}, // every request carries ignore_eos
	// Prompt lengths are counted by the server's /tokenize, with the served
	// model's own tokenizer.
	"tokenizer":         {n: 1, set: func(*vllmArgs, []string) error { return nil }},
	"tokenizer-mode":    {n: 1, set: func(*vllmArgs, []string) error { return nil }},
	"trust-remote-code": {n: 0, set: func(*vllmArgs, []string) error { return nil }},

	"disable-tqdm":            {n: 0, why: "progress is one line per level"},
	"header":                  {n: many, why: "requests carry the API key header only"},
	"profile":                 {n: 0, why: "a sweep does not capture: profdeck profile does"},
	"append-result":           {n: 0, why: "each run writes a result document of its own"},
	"self-timed":              {n: 0, why: "timed traces are not read"},
	"no-self-timed":           {n: 0, why: "timed traces are not read"},
	"probe-request-rate":      {n: 1, why: "no probe requests are sent"},
	"request-id-prefix":       {n: 1, why: "the server names the requests"},
	"use-beam-search":         {n: 0, why: vllmSampling},
	"logprobs":                {n: 1, why: vllmSampling},
	"top-p":                   {n: 1, why: vllmSampling},
	"top-k":                   {n: 1, why: vllmSampling},
	"min-p":                   {n: 1, why: vllmSampling},
	"temperature":             {n: 1, why: vllmSampling},
	"frequency-penalty":       {n: 1, why: vllmSampling},
	"presence-penalty":        {n: 1, why: vllmSampling},
	"repetition-penalty":      {n: 1, why: vllmSampling},
	"extra-body":              {n: 1, why: vllmSampling},
	"chat-template-kwargs":    {n: 1, why: "prompts are sent as text, with no client-side template"},
	"skip-chat-template":      {n: 0, why: "prompts are sent as text, with no client-side template"},
	"lora-modules":            {n: many, why: "requests name the one served model"},
	"lora-assignment":         {n: 1, why: "requests name the one served model"},
	"ramp-up-strategy":        {n: 1, why: "an open loop keeps one rate (the search varies it: --search rate)"},
	"ramp-up-start-rps":       {n: 1, why: "an open loop keeps one rate (the search varies it: --search rate)"},
	"ramp-up-end-rps":         {n: 1, why: "an open loop keeps one rate (the search varies it: --search rate)"},
	"ready-check-timeout-sec": {n: 1, why: "the sweep checks the server before its first level"},
	"skip-tokenizer-init":     {n: 0, why: "no tokenizer is loaded here"},
	"insecure":                {n: 0, why: "https certificates are checked"},
	"plot-timeline":           {n: 0, why: "the cockpit draws the levels (profdeck report writes the notebook)"},
	"timeline-itl-thresholds": {n: 1, why: "the cockpit draws the levels (profdeck report writes the notebook)"},
	"plot-dataset-stats":      {n: 0, why: "the cockpit draws the levels (profdeck report writes the notebook)"},
	"no-stream":               {n: 0, why: "dataset files are read whole"},
	"no-oversample":           {n: 0, why: "a dataset shorter than the requests is sent again from its start"},
	"disable-shuffle":         {n: 0, why: "prompts are drawn with --seed"},
	"enable-multimodal-chat":  {n: 0, why: "prompts are text"},
	"sharegpt-output-len":     {n: 1, why: "a ShareGPT prompt's output length is its reply's"},
	"random-batch-size":       {n: 1, why: "one prompt per request"},
	"hf-subset":               {n: 1, why: "Hugging Face datasets are not read: --dataset sharegpt|jsonl FILE"},
	"hf-split":                {n: 1, why: "Hugging Face datasets are not read: --dataset sharegpt|jsonl FILE"},
	"hf-name":                 {n: 1, why: "Hugging Face datasets are not read: --dataset sharegpt|jsonl FILE"},
	"hf-output-len":           {n: 1, why: "Hugging Face datasets are not read: --dataset sharegpt|jsonl FILE"},
}

// vllmNames are vLLM's own flag names, for its abbreviations: the table's,
// the sweep's aliases, and those the sweep shares with vLLM.
func vllmNames() []string {
	names := slices.Collect(maps.Keys(vllmFlags))
	for _, as := range campaign.BenchAliases {
		names = append(names, as...)
	}
	return append(names, "model", "seed", "burstiness", "input-len", "output-len", "host",
		"percentile-metrics", "metric-percentiles", "result-filename")
}

// vllmLine rewrites args, a sweep's or a vllm bench serve line, into the
// sweep's flags (fs's), and says what else it asked. A vLLM flag's bad
// value is bad input naming it.
func vllmLine(fs *flag.FlagSet, args []string) ([]string, *vllmArgs, error) {
	v := &vllmArgs{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			if a == "--" {
				rest = append(rest, args[i+1:]...)
				break
			}
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = vllmName(fs, name)
		if name == "host" {
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i]
			}
			v.hostArg(val)
			continue
		}
		f, ok := vllmFlags[name]
		if own := fs.Lookup(name); !ok || own != nil {
			rest = append(rest, vllmSpelled(name, val, hasVal))
			if own != nil && !hasVal && !isBoolFlag(own) && i+1 < len(args) {
				i++
				rest = append(rest, args[i]) // its value, as given (-5 is a value, not a flag)
			}
			continue
		}
		vals, next := vllmValues(args, i, f.n, val, hasVal)
		if f.n != 0 && len(vals) == 0 {
			return nil, nil, BadInput("--%s: needs a value (see profdeck sweep -h)", name)
		}
		i = next
		if f.set == nil {
			v.ignored = append(v.ignored, fmt.Sprintf("ignored: --%s: %s", name, f.why))
			continue
		}
		if err := f.set(v, vals); err != nil {
			return nil, nil, BadInput("--%s %s: %v", name, strings.Join(vals, " "), err)
		}
	}
	if err := v.address(); err != nil {
		return nil, nil, err
	}
	return append(rest, v.out...), v, nil
}

// vllmName is the flag name as fs knows it: underscores as dashes, and a
// unique abbreviation of one of vLLM's names spelled out, as argparse.
func vllmName(fs *flag.FlagSet, name string) string {
	name = strings.ReplaceAll(name, "_", "-")
	if _, ok := vllmFlags[name]; ok || fs.Lookup(name) != nil {
		return name
	}
	var hits []string
	for _, n := range vllmNames() {
		if strings.HasPrefix(n, name) && len(name) >= 3 {
			hits = append(hits, n)
		}
	}
	if len(hits) == 1 {
		return hits[0]
	}
	return name
}

// vllmSpelled is a flag argument with its name spelled out (it may have
// been abbreviated or written with underscores).
func vllmSpelled(name, val string, hasVal bool) string {
	if hasVal {
		return "--" + name + "=" + val
	}
	return "--" + name
}

// vllmValues are the values of the flag at args[i] taking n of them, and
// the index of its last argument.
func vllmValues(args []string, i, n int, val string, hasVal bool) ([]string, int) {
	switch {
	case hasVal:
		return []string{val}, i
	case n == 0:
		return nil, i
	}
	var vals []string
	for i+1 < len(args) && (n == many || len(vals) < n) && !strings.HasPrefix(args[i+1], "--") {
		i++
		vals = append(vals, args[i])
	}
	return vals, i
}

// hostArg takes a --host: the sweep's host (sim, local, an SSH target), or
// vLLM's server address when --port comes too (address decides).
func (v *vllmArgs) hostArg(val string) {
	if val == "sim" {
		v.sim = true
	}
	v.host = val
}

// address settles --host, --port and --base-url: --base-url is the
// server's URL; with --port, --host is vLLM's, the
// server's address (127.0.0.1 when not given), and the sweep's host is the
// campaign's; with --host sim, the emulator's address stands and --port is
// said ignored; else --host is the sweep's.
func (v *vllmArgs) address() error {
	switch {
	case v.sim:
		v.out = append(v.out, "--host", "sim")
		for _, f := range [][2]string{{"--port", v.port}, {"--base-url", v.baseURL}} {
			if f[1] != "" {
				v.ignored = append(v.ignored, "ignored: "+f[0]+": the simulated host serves at its own address")
			}
		}
	case v.baseURL != "":
		v.out = append(v.out, "--url", v.baseURL)
	case v.port != "":
		if _, err := strconv.ParseUint(v.port, 10, 16); err != nil {
			return BadInput("--port %s: want a port number (e.g. 8000)", v.port)
		}
		host := v.host
		if host == "" {
			host = "127.0.0.1" // vLLM's default
		}
		v.out = append(v.out, "--url", "http://"+net.JoinHostPort(host, v.port))
	case v.host != "":
		v.out = append(v.out, "--host", v.host)
	}
	return nil
}

func (v *vllmArgs) meta(k, val string) {
	if v.metadata == nil {
		v.metadata = map[string]string{}
	}
	v.metadata[k] = val
}

// vllmBackend is --backend (and its older name --endpoint-type): the
// OpenAI completions backends and the chat one.
func vllmBackend(v *vllmArgs, s []string) error {
	switch s[0] {
	case "openai", "vllm", "sglang", "lmdeploy", "scalellm", "llama.cpp":
		v.out = append(v.out, "--api", "completions")
	case "openai-chat", "vllm-chat":
		v.out = append(v.out, "--api", "chat")
	default:
		return fmt.Errorf("want openai or vllm (completions), or openai-chat (chat): the sweep drives OpenAI completions and chat streams")
	}
	return nil
}

// vllmEndpoint is --endpoint: /v1/completions or /v1/chat/completions.
func vllmEndpoint(v *vllmArgs, s []string) error {
	switch strings.TrimRight(s[0], "/") {
	case "/v1/completions":
		v.out = append(v.out, "--api", "completions")
	case "/v1/chat/completions":
		v.out = append(v.out, "--api", "chat")
	default:
		return fmt.Errorf("want /v1/completions or /v1/chat/completions")
	}
	return nil
}

// vllmGoodput is --goodput KEY:MS …: the SLO in milliseconds, as --slo.
func vllmGoodput(v *vllmArgs, s []string) error {
	var parts []string
	for _, kv := range s {
		k, ms, ok := strings.Cut(kv, ":")
		x, err := strconv.ParseFloat(ms, 64)
		if !ok || err != nil || x < 0 || (k != "ttft" && k != "tpot" && k != "e2el") {
			return fmt.Errorf("want KEY:VALUE pairs, KEY ttft, tpot or e2el and VALUE milliseconds (e.g. ttft:300 tpot:50), got %q", kv)
		}
		parts = append(parts, fmt.Sprintf("%s=%gms", k, x))
	}
	v.out = append(v.out, "--slo", strings.Join(parts, ","))
	return nil
}

// vllmMetadata is --metadata KEY=VALUE …, recorded in the result document.
func vllmMetadata(v *vllmArgs, s []string) error {
	for _, kv := range s {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("want KEY=VALUE pairs (e.g. version=0.3.3 tp=1), got %q", kv)
		}
		v.meta(strings.TrimSpace(k), strings.TrimSpace(val))
	}
	return nil
}

// isBoolFlag reports whether f is a switch (it takes no value after it).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
