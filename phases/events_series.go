package phases

// KindMacroSeries is one level's per-second figures, journalled when the
// level ends, so that a reopened journal draws the charts the ticks drew
// live (the ticks themselves are not journalled).
const KindMacroSeries = "macro.series"

// MaxSeries is the most seconds a level's series keeps (its newest).
const MaxSeries = 1024

// MacroSeries is one level's ticks, one entry a second in each list: the
// client's TPOT p50 and p99, TTFT p50 and output tokens per second, and
// the server's running and waiting requests from its latest scrape (0
// when none was recent).
type MacroSeries struct {
	Concurrency int       `json:"concurrency"`
	Rate        float64   `json:"request_rate,omitempty"`
	TPOTp50ms   []float64 `json:"tpot_p50_ms"`
	TPOTp99ms   []float64 `json:"tpot_p99_ms"`
	TTFTp50ms   []float64 `json:"ttft_p50_ms"`
	OutputTokS  []float64 `json:"output_tok_s"`
	Running     []float64 `json:"running"`
	Waiting     []float64 `json:"waiting"`
}

// Add appends one second, keeping the newest MaxSeries.
func (s *MacroSeries) Add(t MacroTick, running, waiting float64) {
	if len(s.TPOTp50ms) >= MaxSeries {
		for _, l := range []*[]float64{&s.TPOTp50ms, &s.TPOTp99ms, &s.TTFTp50ms, &s.OutputTokS, &s.Running, &s.Waiting} {
			*l = (*l)[1:]
		}
	}
	s.TPOTp50ms = append(s.TPOTp50ms, t.TPOTp50ms)
	s.TPOTp99ms = append(s.TPOTp99ms, t.TPOTp99ms)
	s.TTFTp50ms = append(s.TTFTp50ms, t.TTFTp50ms)
	s.OutputTokS = append(s.OutputTokS, t.OutputTokS)
	s.Running = append(s.Running, running)
	s.Waiting = append(s.Waiting, waiting)
}

// Len is how many seconds the series holds.
func (s *MacroSeries) Len() int {
	n := len(s.TPOTp50ms)
	for _, l := range [][]float64{s.TPOTp99ms, s.TTFTp50ms, s.OutputTokS, s.Running, s.Waiting} {
		n = min(n, len(l))
	}
	return n
}

func init() {
	Register(KindMacroSeries, Macro, MacroSeries{}, false)
}
