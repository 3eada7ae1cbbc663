package headless

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/report"
)

const explainUsage = `profdeck explain FILE [--level C] [--max-num-seqs N] [--json FILE|-]

Says what limited throughput at one level of a sweep: client_bound, kv_cache,
max_num_seqs, engine_step, power_throttled, clock_throttled (the GPUs held at
their power cap or their clocks down) or unknown, with the numbers that show it and what to
do; at the sweep's plateau, the verdict the sweep stored (it knew the
server's limits); from a journal, the level's decode-time budget as the
notebook quotes it. FILE is a campaign journal (JOURNAL#N picks its Nth sweep) or a
` + "`profdeck sweep --json`" + ` file; --level picks the level (default: the plateau's, else
the last). --max-num-seqs gives the server's limit when the launch command set
it. It reads the file it names only: no -c or --host, and no --jsonl. Exit 0,
1 when the document cannot be written, 2 for bad input.`

// explanation is explain's result document.
type explanation struct {
	File        string `json:"file"`
	Concurrency int    `json:"concurrency"`
	Reason      string `json:"reason"`
	Evidence    string `json:"evidence"`
	// Budget is the level's decode-time budget, from a journal that has
	// one for the same sweep.
	Budget *report.BudgetSplit `json:"budget,omitempty"`
}

// ExplainMain is "profdeck explain": the verdict for any level of a sweep.
func ExplainMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand("explain", explainUsage, stdout, stderr)
	c.flagJSON()
	level := c.Flags.Int("level", 0, "the level's concurrency (default: the plateau's, else the last level)")
	seqs := c.Flags.Int("max-num-seqs", 0, "the server's --max-num-seqs, when known")
	pos, err := c.ParseFiles(args, 1)
	if err == nil {
		err = notAnInput(c, pos)
	}
	if err != nil {
		return c.Exit(ctx, err)
	}
	sw, err := loadSweep(c, pos[0])
	if err != nil {
		return c.Exit(ctx, err)
	}
	if len(sw.Levels) == 0 {
		return c.Exit(ctx, BadInput("%s: no level finished", pos[0]))
	}
	want := *level
	if want == 0 && sw.Plateau != nil {
		want = sw.Plateau.Concurrency
	}
	idx := len(sw.Levels) - 1
	if want != 0 {
		idx = -1
		for i, l := range sw.Levels {
			if l.Concurrency == want && l.Rate == 0 {
				idx = i
			}
		}
		if idx < 0 {
			return c.Exit(ctx, BadInput("--level %d: %s has no level at that concurrency", want, pos[0]))
		}
	}
	lim := macro.PlateauLimits(sw.Plateau) // what the sweep knew of the server when it judged
	if *seqs > 0 {
		lim = macro.Limits{MaxNumSeqs: *seqs, Source: "--max-num-seqs"}
	}
	reason, evidence := macro.Explain(sw.Levels, idx, lim)
	if p := sw.Plateau; p != nil && p.Reason != "" && *seqs == 0 && sw.Levels[idx].Concurrency == p.Concurrency {
		// The sweep's own verdict at its plateau, as it stored it: the
		// sweep knew the server's limits (its launch command) when it
		// judged.
		reason, evidence = p.Reason, p.Evidence
	}
	fmt.Fprintf(c.Human(), "%s: %s\n", reason, evidence)
	doc := explanation{File: pos[0], Concurrency: sw.Levels[idx].Concurrency, Reason: reason, Evidence: evidence}
	if b := journalBudget(pos[0], sw.Levels[idx]); b != nil {
		doc.Budget = b
		fmt.Fprintf(c.Human(), "budget at C=%d: %s\n", b.Concurrency, b.Headline)
	}
	return c.Exit(ctx, c.WriteJSON(doc))
}

// journalBudget is the budget at the level lv of a journal's sweep, as the
// notebook and run --json quote it (nil for a sweep document, or when the
// journal's budget at that C splits another sweep's level).
func journalBudget(path string, lv phases.LevelResult) *report.BudgetSplit {
	file, _, _ := strings.Cut(path, "#")
	if _, err := os.Stat(path); err == nil {
		file = path
	}
	rr, err := report.ReadJournalFile(file)
	if err != nil || len(rr.Events) == 0 {
		return nil
	}
	bud := report.Budget(rr.Events)
	for _, b := range append([]report.BudgetSplit{bud.Single}, bud.Levels...) {
		if b.Concurrency == lv.Concurrency && b.HasTPOT && b.TPOTms == lv.MedianTPOTms {
			return &b
		}
	}
	return nil
}
