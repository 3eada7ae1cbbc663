package servermetrics

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

// Figures is what `profdeck parse metrics` prints: the pane's server view of
// one /metrics text. Rates need two scrapes, so one file gives totals.
type Figures struct {
	File      string `json:"file"`
	Available bool   `json:"available"`
	Snapshot
	// SpecAcceptance is accepted over drafted tokens since the server
	// started (the pane shows it per second).
	SpecAcceptance *float64 `json:"spec_accept_rate_total,omitempty"`
	// Missing names the figures whose series the text lacks: they read 0
	// above but were not measured.
	Missing []string `json:"missing,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// missing lists the figures a snapshot has no series for.
func missing(s Snapshot) []string {
	has := map[string]bool{}
	for _, f := range s.Found {
		has[f] = true
	}
	var out []string
	for _, f := range []struct{ field, a, b string }{
		{"running", nameRunning, ""},
		{"waiting", nameWaiting, ""},
		{"kv_cache_usage", nameKVCache, nameKVCacheOld},
		{"preemptions_total", namePreemptions, ""},
		{"generation_tokens_total", nameGenTokens, ""},
	} {
		if !has[f.a] && (f.b == "" || !has[f.b]) {
			out = append(out, f.field)
		}
	}
	return out
}

// ParseMain is `profdeck parse metrics FILE`: it reads a saved /metrics text
// (use - for standard input) and prints the figures profdeck takes from it as
// JSON.
func ParseMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parse metrics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck parse metrics FILE   (a saved /metrics text; - reads standard input)")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	name := fs.Arg(0)
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "profdeck parse metrics: %v\n", err)
			return 1
		}
		defer f.Close()
		r = f
	}
	snap, err := Parse(r)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck parse metrics: %s: %v\n", name, err)
		return 1
	}
	out := Figures{File: name, Available: snap.Available(), Snapshot: snap, SpecAcceptance: snap.SpecAcceptance(),
		Missing: missing(snap)}
	if out.Found == nil {
		out.Found = []string{}
	}
	if !out.Available {
		out.Note = "no vLLM serving series found"
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "profdeck parse metrics: %v\n", err)
		return 1
	}
	return 0
}
