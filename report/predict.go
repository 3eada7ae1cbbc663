package report

import (
	"fmt"
	"sort"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// BaselineFigures are the baseline's measurements a variant's prediction
// is made from: the sweep's plateau and its verdict, each closed-loop
// level, the decode-time budget's parts where it was split, micro's GEMM
// step sums, the KV cache's capacity, the GPUs, the NCCL figures, the
// speculative acceptance where measured and the SLO search's answer.
type BaselineFigures struct {
	PlateauC    int     `json:"plateau_concurrency,omitempty"`
	PlateauTokS float64 `json:"plateau_tok_s,omitempty"`
	// Verdict is what limits the plateau (macro's classes), judged again
	// over the sweep's levels with the limits the sweep knew; VerdictWhy
	// its line.
	Verdict          string `json:"verdict,omitempty"`
	VerdictWhy       string `json:"verdict_why,omitempty"`
	MaxNumSeqs       int    `json:"max_num_seqs,omitempty"`
	MaxNumSeqsSource string `json:"max_num_seqs_source,omitempty"`
	// Levels are the sweep's closed-loop levels in order of C.
	Levels []BaselineLevel `json:"levels,omitempty"`
	// Budgets are the budget's whole splits at C=1, the plateau and the
	// profiled levels between, in order of C.
	Budgets []BudgetFigures `json:"budgets,omitempty"`
	// MicroGEMMms is micro's per-step GEMM sum by M.
	MicroGEMMms map[int]float64 `json:"micro_gemm_ms,omitempty"`
	// KVSeqs is how many requests of the sweep's length the KV cache
	// holds, KVFrom how that was had; KVTokens the load's capacity.
	KVTokens int64   `json:"kv_cache_tokens,omitempty"`
	KVSeqs   float64 `json:"kv_sequences,omitempty"`
	KVFrom   string  `json:"kv_from,omitempty"`
	TP       int     `json:"tp,omitempty"`
	GPUs     int     `json:"gpus,omitempty"`
	// AllReduce and AllToAll are the NCCL phase's figures at the sizes it
	// measured; NoCollectives why there were none to measure.
	AllReduce     []AllReduceFigure `json:"all_reduce,omitempty"`
	AllToAll      []AllToAllFigure  `json:"all_to_all,omitempty"`
	NoCollectives string            `json:"no_collectives,omitempty"`
	// SpecAcceptLength is the mean accepted length (bonus token included)
	// at SpecAt, the highest level that measured one (0: none did).
	SpecAcceptLength float64 `json:"spec_accept_length,omitempty"`
	SpecAt           int     `json:"spec_at,omitempty"`
	// Search is the SLO search's last finished answer (nil: none ran).
	Search *phases.Search `json:"search,omitempty"`
	// PromptLen and OutputLen are the tokens per request of the plateau's
	// level (else the largest level's).
	PromptLen float64 `json:"prompt_len,omitempty"`
	OutputLen float64 `json:"output_len,omitempty"`
	// NoPlateau says the sweep found no plateau and its top level stands
	// for it ("" when it found one).
	NoPlateau string `json:"no_plateau,omitempty"`
}

// BaselineLevel is one closed-loop level of the baseline's sweep.
type BaselineLevel struct {
	C            int     `json:"concurrency"`
	TokS         float64 `json:"tok_s"`
	MeanTPOTms   float64 `json:"mean_tpot_ms"`
	MedianTPOTms float64 `json:"median_tpot_ms"`
	P90TPOTms    float64 `json:"p90_tpot_ms"`
	P99TPOTms    float64 `json:"p99_tpot_ms"`
	MeanTTFTms   float64 `json:"mean_ttft_ms"`
	// The scheduler: mean and most running, the share of scrapes at the
	// most and with a queue, the KV cache's peak use (0..1).
	MeanRunning  float64 `json:"mean_running,omitempty"`
	MaxRunning   float64 `json:"max_running,omitempty"`
	WaitingShare float64 `json:"waiting_share,omitempty"`
	MaxKV        float64 `json:"max_kv,omitempty"`
	// The prefills a running request waited for: ms per output token,
	// prompt tokens per output token, requests decoding per prompt token;
	// the decode step alone (the clean token gap); prompt tokens per
	// decode step and whether they ran inside the decode steps.
	PrefillMs       float64 `json:"prefill_ms,omitempty"`
	PromptPerToken  float64 `json:"prompt_per_token,omitempty"`
	DecodeBatch     float64 `json:"decode_batch,omitempty"`
	CleanGapMs      float64 `json:"clean_gap_ms,omitempty"`
	PromptPerStep   float64 `json:"prompt_per_step,omitempty"`
	Mixed           bool    `json:"mixed,omitempty"`
	HasPrefill      bool    `json:"has_prefill,omitempty"`
	JPerToken       float64 `json:"j_per_token,omitempty"`
	SpecAcceptLen   float64 `json:"spec_accept_length,omitempty"`
	PromptLen       float64 `json:"prompt_len,omitempty"`
	OutputLen       float64 `json:"output_len,omitempty"`
	WaitingQueueMax float64 `json:"max_waiting,omitempty"`
}

// BudgetFigures are one level's TPOT split whole (report.Budget): the
// decode step's parts and the prefill part, in ms per output token.
type BudgetFigures struct {
	C          int     `json:"concurrency"`
	MeanTPOTms float64 `json:"mean_tpot_ms"`
	CommMs     float64 `json:"communication_ms"`
	GEMMms     float64 `json:"gemm_ms"`
	AttnMs     float64 `json:"attention_ms"`
	OtherMs    float64 `json:"other_ms"`
	HostMs     float64 `json:"host_ms"`
	PrefillMs  float64 `json:"prefill_ms"`
	// Complete: every decode part was measured (the decode step is split);
	// Partial: GEMM (and communication) only, the rest of the step not
	// split apart from the prefills.
	Complete bool `json:"complete"`
	Partial  bool `json:"partial,omitempty"`
}

// StepMs is the decode step: its parts' sum.
func (f BudgetFigures) StepMs() float64 {
	return f.CommMs + f.GEMMms + f.AttnMs + f.OtherMs + f.HostMs
}

// AllReduceFigure is the NCCL burst of one decode step at M tokens.
type AllReduceFigure struct {
	M       int     `json:"m"`
	NProc   int     `json:"nproc"`
	Count   int     `json:"count"`
	Bytes   int64   `json:"bytes"`
	StepMs  float64 `json:"step_ms"`
	PerOpUs float64 `json:"per_op_us"`
	// BusBWGBs is the bus bandwidth of one all-reduce: 2(n−1)/n × bytes
	// over its time.
	BusBWGBs float64 `json:"busbw_gbs"`
}

// AllToAllFigure is one All-to-All size the NCCL phase timed.
type AllToAllFigure struct {
	Tokens   int     `json:"tokens_per_gpu"`
	NProc    int     `json:"nproc"`
	Bytes    int64   `json:"bytes"`
	Us       float64 `json:"us"`
	BusBWGBs float64 `json:"busbw_gbs"`
}

// VariantEvents splits a journal's events by variant: "baseline" for those
// before the first variant.started and outside any variant, each variant's
// name for those between its started/finished.
func VariantEvents(events []phases.Event) map[string][]phases.Event {
	out := map[string][]phases.Event{}
	name := phases.Baseline
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.VariantStarted:
			name = d.Spec.Name
			continue
		case phases.VariantFinished:
			name = phases.Baseline
			continue
		}
		out[name] = append(out[name], ev)
	}
	return out
}

// BaselineOf reads the figures a prediction needs from the baseline's events.
func BaselineOf(events []phases.Event) BaselineFigures {
	in := collectBudgetInputs(events)
	var b BaselineFigures
	b.Levels = baselineLevels(in)
	b.plateau(in)
	b.budgets(Budget(events))
	b.MicroGEMMms = map[int]float64{}
	for m, st := range in.steps {
		if st.SumUs > 0 {
			b.MicroGEMMms[m] = st.SumUs / 1000
		}
	}
	b.nccl(in, events)
	b.others(events)
	b.kvSeqs()
	return b
}

// plateau reads the sweep's plateau and judges its verdict again over the
// levels, with the limits the sweep knew.
func (b *BaselineFigures) plateau(in budgetInputs) {
	p := in.plateau
	if (p == nil || p.Concurrency <= 0) && len(b.Levels) > 0 {
		top := b.Levels[len(b.Levels)-1]
		b.PlateauC, b.PlateauTokS = top.C, top.TokS
		b.NoPlateau = fmt.Sprintf("the baseline's sweep found no plateau: its top level, C=%d, stands for it", top.C)
		b.PromptLen, b.OutputLen = top.PromptLen, top.OutputLen
		return
	}
	if p == nil || p.Concurrency <= 0 {
		return
	}
	b.PlateauC, b.PlateauTokS = p.Concurrency, p.OutputThroughput
	b.Verdict, b.VerdictWhy = p.Reason, p.Evidence
	b.MaxNumSeqs, b.MaxNumSeqsSource = p.MaxNumSeqs, p.MaxNumSeqsSource
	var levels []phases.LevelResult
	for _, l := range b.Levels {
		levels = append(levels, in.levels[l.C])
	}
	for i, l := range levels {
		if l.Concurrency == p.Concurrency {
			b.Verdict, b.VerdictWhy = macro.Explain(levels, i, macro.PlateauLimits(p))
		}
	}
	if l, ok := b.level(p.Concurrency); ok {
		b.PromptLen, b.OutputLen = l.PromptLen, l.OutputLen
	}
}

// level is the baseline's level at C.
func (b BaselineFigures) level(c int) (BaselineLevel, bool) {
	for _, l := range b.Levels {
		if l.C == c {
			return l, true
		}
	}
	return BaselineLevel{}, false
}

// baselineLevels are the sweep's closed-loop levels with a TPOT, in order.
func baselineLevels(in budgetInputs) []BaselineLevel {
	var out []BaselineLevel
	for c, lv := range in.levels {
		if c <= 0 || lv.Completed == 0 || lv.MeanTPOTms <= 0 || lv.Few() || len(lv.Steered) > 0 {
			continue
		}
		out = append(out, levelFigures(lv))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].C < out[j].C })
	return out
}

// levelFigures are one level's figures.
func levelFigures(lv phases.LevelResult) BaselineLevel {
	l := BaselineLevel{C: lv.Concurrency, TokS: lv.OutputThroughput, MeanTPOTms: lv.MeanTPOTms, MedianTPOTms: lv.MedianTPOTms, P90TPOTms: lv.P90TPOTms,
		P99TPOTms: lv.P99TPOTms, MeanTTFTms: lv.MeanTTFTms}
	l.PromptLen = float64(lv.TotalInputTokens) / float64(lv.Completed)
	l.OutputLen = float64(lv.TotalOutputTokens) / float64(lv.Completed)
	if s := lv.Server; s != nil && s.Available {
		l.MeanRunning, l.MaxRunning, l.WaitingShare, l.MaxKV, l.WaitingQueueMax = s.MeanRunning, s.MaxRunning, s.WaitingShare, s.MaxKVCacheUsage, s.MaxWaiting
		if s.SpecAcceptLength != nil {
			l.SpecAcceptLen = *s.SpecAcceptLength
		}
		if m := s.StepMix; m != nil {
			n, mixed := decodeSteps(*m, lv.Concurrency, l.PromptLen)
			l.Mixed = mixed
			if n > 0 {
				l.PromptPerStep = m.PromptTokens / n
			}
		}
	}
	if pw := lv.PrefillWait; pw != nil && pw.Measured > 0 {
		l.PrefillMs, l.PromptPerToken, l.DecodeBatch, l.CleanGapMs = pw.StallMsPerToken, pw.PromptTokensPerToken, pw.DecodeBatch, pw.CleanGapMs
		l.HasPrefill = true
	}
	if lv.GPU != nil {
		l.JPerToken = lv.GPU.JPerOutputToken
	}
	return l
}

// budgets keeps the budget's whole splits.
func (b *BaselineFigures) budgets(res BudgetResult) {
	for _, s := range res.Levels {
		w := s.Whole
		if w == nil {
			continue
		}
		f := BudgetFigures{C: s.Concurrency, MeanTPOTms: w.TPOTms}
		seen := map[string]bool{}
		for _, p := range w.Parts {
			seen[p.Name] = true
			switch p.Name {
			case PartComm:
				f.CommMs += p.Ms
			case PartGEMM:
				f.GEMMms += p.Ms
			case PartAttention:
				f.AttnMs += p.Ms
			case PartOther:
				f.OtherMs += p.Ms
			case PartHost:
				f.HostMs += p.Ms
			case PartPrefill:
				f.PrefillMs += p.Ms
			}
		}
		f.Complete = seen[PartComm] && seen[PartGEMM] && seen[PartAttention] && seen[PartOther] && seen[PartHost]
		f.Partial = !f.Complete && seen[PartGEMM]
		b.Budgets = append(b.Budgets, f)
	}
}
