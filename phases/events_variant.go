package phases

// Variant event kinds: a campaign that compares server configurations
// serves its baseline and then each variant in turn. Before a variant is
// launched its prediction (made from the baseline's measurements alone) is
// journalled; its launch, then its own steps (load, sweep, search …) follow
// as usual, between a variant.started and a variant.finished.
const (
	KindVariantPlanned   = "variant.planned"
	KindVariantPredicted = "variant.predicted"
	KindVariantStarted   = "variant.started"
	KindVariantFinished  = "variant.finished"
)

// Baseline is the variant name of the campaign's own launch.
const Baseline = "baseline"

// VariantSpec is one named change to the server: flags added to the
// baseline's launch (replacing the same flags there), or a whole launch
// line, and environment variables.
type VariantSpec struct {
	Name   string            `json:"name"`
	Args   []string          `json:"args,omitempty"`
	Launch string            `json:"launch,omitempty"` // redacted
	Env    map[string]string `json:"env,omitempty"`    // values redacted where secret
}

// VariantPlanned lists the variants a run will serve, in the order that
// needs the fewest loads, and those done earlier (resumed).
type VariantPlanned struct {
	Variants []VariantSpec `json:"variants"`
	Done     []string      `json:"done,omitempty"`
}

// Predicted is one predicted figure with the formula and inputs it came
// from ("plateau 3757 tok/s × 64/128 running …"). OK is false when the
// model cannot predict it; Why says why.
type Predicted struct {
	Value   float64 `json:"value"`
	OK      bool    `json:"ok"`
	Formula string  `json:"formula,omitempty"`
	Why     string  `json:"why,omitempty"`
	// Uncertainty is the prediction's own stated uncertainty, ± percent
	// of Value (0: not said).
	Uncertainty float64 `json:"uncertainty_pct,omitempty"`
}

// VariantPrediction is what a variant is expected to measure, from the
// baseline's measurements alone, made before it runs. Every figure is an
// estimate; Model lists the model's lines and Warnings what it assumed.
type VariantPrediction struct {
	Variant       string    `json:"variant"`
	PlateauTokS   Predicted `json:"plateau_tok_s"`
	PlateauC      Predicted `json:"plateau_concurrency"`
	TPOTC1Ms      Predicted `json:"tpot_c1_ms"`
	TPOTPlateauMs Predicted `json:"tpot_plateau_ms"`
	SLOCapacity   Predicted `json:"slo_capacity"` // the search's answer (concurrency or req/s, as the search)
	Model         []string  `json:"model,omitempty"`
	Warnings      []string  `json:"warnings,omitempty"`
	CannotPredict string    `json:"cannot_predict,omitempty"`
	// GPUs is the GPUs the variant serves on, as predicted from its
	// tensor- and data-parallel sizes (0: not known).
	GPUs int `json:"gpus,omitempty"`
}

// VariantStarted opens one variant's part of the run: its launch exactly as
// served (redacted).
type VariantStarted struct {
	Spec   VariantSpec `json:"spec"`
	Launch string      `json:"launch"`
	Env    []string    `json:"env,omitempty"` // NAME=value, redacted
	// SharesLoadOf names the variant served just before whose server it
	// is (the same launch and environment): no load of its own.
	SharesLoadOf string `json:"shares_load_of,omitempty"`
}

// VariantFinished closes it: done, or failed/stalled with the evidence
// (the load's last log lines, the error), after which the run goes on with
// the next variant.
type VariantFinished struct {
	Name     string `json:"name"`
	State    string `json:"state"` // StepDone, StepFailed, StepStalled, StepStopped
	Evidence string `json:"evidence,omitempty"`
}

func init() {
	Register(KindVariantPlanned, Session, VariantPlanned{}, false)
	Register(KindVariantPredicted, Session, VariantPrediction{}, false)
	Register(KindVariantStarted, Session, VariantStarted{}, false)
	Register(KindVariantFinished, Session, VariantFinished{}, false)
}
