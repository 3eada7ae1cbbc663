package servermetrics

import "encoding/json"

// Figures is what `profdeck parse metrics` prints: the pane's server view of
// one /metrics text. Rates need two scrapes, so one file gives totals.
type Figures struct {
	File      string `json:"file"`
	Available bool   `json:"available"`
	Snapshot
	// SpecAcceptance is accepted over drafted tokens since the server
	// started (the pane shows it per second).
	SpecAcceptance *float64 `json:"spec_accept_rate_total,omitempty"`
	// Missing names the figures whose series the text lacks: they are
	// null in the JSON (never 0: they were not measured).
	Missing []string `json:"missing,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// missing lists the figures a snapshot has no series for.
func missing(s Snapshot) []string {
	has := map[string]bool{}
	for _, f := range s.Found {
		has[f] = true
	}
	if s.Engine == EngineSGLang {
		return sglangMissing(has)
	}
	var out []string
	for _, f := range []struct{ field, a, b string }{
		{"running", nameRunning, ""},
		{"waiting", nameWaiting, ""},
		{"kv_cache_usage", nameKVCache, nameKVCacheOld},
		{"preemptions_total", namePreemptions, ""},
		{"generation_tokens_total", nameGenTokens, ""},
		{"prompt_tokens_total", namePromptTok, namePromptHist},
		{"requests_total", nameRequests, ""},
	} {
		if !has[f.a] && (f.b == "" || !has[f.b]) {
			out = append(out, f.field)
		}
	}
	return out
}

// FiguresOf is the figures of a snapshot read from the file name.
func FiguresOf(name string, snap Snapshot) Figures {
	out := Figures{File: name, Available: snap.Available(), Snapshot: snap, SpecAcceptance: snap.SpecAcceptance(),
		Missing: missing(snap)}
	if out.Found == nil {
		out.Found = []string{}
	}
	if !out.Available {
		out.Note = "no vLLM or SGLang serving series found"
	}
	return out
}

// MarshalJSON writes the figures with every missing one as null.
func (f Figures) MarshalJSON() ([]byte, error) {
	type plain Figures
	b, err := json.Marshal(plain(f))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range []string{"prompt_tokens_total", "requests_total"} {
		if _, ok := m[k]; !ok {
			m[k] = 0.0 // omitted when 0; set back, then nulled below when missing
		}
	}
	for _, k := range f.Missing {
		m[k] = nil
	}
	return json.Marshal(m)
}
