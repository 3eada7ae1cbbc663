package macro

import _ "embed"

// SampleTrace is a small Mooncake trace made here (24 requests over 6.5 s
// whose prompts share blocks: its hash ids imply 83% prefix reuse), for
// the demo's replay.
//
//go:embed testdata/trace_mooncake.jsonl
var SampleTrace []byte
