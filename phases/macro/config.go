package macro

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// The two APIs the client can drive.
const (
	APICompletions = "completions"
	APIChat        = "chat"
)

// The sweep's defaults, the campaign's too (campaign.Defaults reads them):
// the levels, the measured requests per level, and the lengths.
var DefaultConcurrency = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}

const (
	DefaultRequests  = 64
	DefaultInputLen  = 256
	DefaultOutputLen = 256
)

// Config is what one sweep does. The zero value of every field but URL means
// its default.
type Config struct {
	URL         string        // server base URL, e.g. http://127.0.0.1:8000
	Model       string        // default: the first id from /v1/models
	API         string        // "completions" (default) or "chat"
	Concurrency []int         // levels, default DefaultConcurrency
	Requests    int           // measured requests per level (default 64 unless Duration is set; at least 2×C)
	Duration    time.Duration // measured time per level; with Requests too, the level ends at whichever comes last
	Warmup      int           // requests per level sent before the measured ones, not counted
	InputLen    int           // prompt tokens (default 256)
	OutputLen   int           // output tokens, fixed with ignore_eos and min_tokens (default 256)
	Rate        float64       // >0: one open-loop level at Rate req/s (arrivals as Arrivals says)
	// Arrivals is how an open loop spaces its requests: ArrivalsPoisson
	// (default; gaps drawn from a gamma distribution of shape Burstiness,
	// as vLLM bench serve's --burstiness, 1 being Poisson) or
	// ArrivalsConstant (every 1/Rate seconds).
	Arrivals   string
	Burstiness float64
	// LatencyFrom is where TTFT and E2EL start: LatencySent (default, the
	// request's actual send) or LatencyIntended (its intended send time:
	// the coordinated-omission correction, a late client's wait counted).
	LatencyFrom string
	// Search, phases.SearchConcurrency or phases.SearchRate, finds the
	// largest concurrency or rate meeting SLO (which it needs) instead of
	// running the levels once each; SearchTolerance is how close its bounds
	// must come (default DefaultSearchTolerance).
	Search          string
	SearchTolerance float64
	// StopAtPlateau ends the sweep at the plateau level.
	StopAtPlateau bool
	// NoPreflight skips the request sent with the sweep's settings before
	// the first level (which settles continuous_usage_stats and stops the
	// sweep early when the server refuses the request).
	NoPreflight bool
	// APIKey is sent as "Authorization: Bearer". It never reaches events.
	APIKey string
	// Path is how the requests reach the server when the caller knows
	// better than Host and Dial tell: phases.PathHost when the sweep runs
	// on the server's host (--loadgen host). Empty: worked out (SSH when
	// Host forwards Dial's connections, else direct).
	Path string
	// Dial, when set, opens the client's connections (e.g. through a
	// remote.Host's DialContext, so a server bound to a GPU host's localhost
	// is reachable).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// JSONL, when set, gets one JSON line per finished request, written as
	// each request ends.
	JSONL io.Writer
	// Scraper, when set, is polled once a second for the server's own figures.
	Scraper Scraper
	// GPU, when set, samples the host's GPUs for the sweep's length; each
	// level gets their figures over its throughput window.
	GPU GPUSampler
	// Timeout bounds one request from send to its last byte (default
	// DefaultTimeout).
	Timeout time.Duration
	// ClientBoundLag is the p99 send lag above which a level is flagged
	// client_bound (default 10ms).
	ClientBoundLag time.Duration
	// Seed makes prompts and arrival times repeatable (default: time based).
	Seed int64
	// Limits are the server's configured limits, as far as known (the
	// plateau's verdict names them); what they lack is read from the start
	// of ServerLog on Host, when both are set.
	Limits    Limits
	Host      remote.Host
	ServerLog string
	// SLO, e.g. "ttft=2s,tpot=50ms,e2el=30s": goodput per level and the
	// largest concurrency meeting it.
	SLO string
	slo *slo // SLO parsed
	// Dataset is random (default), sharegpt or jsonl, read from
	// DatasetFile (at most DatasetMax prompts, a seeded sample).
	Dataset     string
	DatasetFile string
	DatasetMax  int
	// RangeRatio spreads random prompt and output lengths uniformly over
	// ±RangeRatio of InputLen and OutputLen, as vLLM's --random-range-ratio.
	RangeRatio float64
	// PrefixLen starts every prompt with the same PrefixLen tokens.
	PrefixLen int
	ds        *dataset
	// Repeat runs each level this many times (default 1); its figures are
	// the runs' means, with 95% confidence intervals.
	Repeat int
	// Percentiles are extra percentiles to report per level, as vLLM's
	// --percentile-metrics and --metric-percentiles (ParsePercentiles).
	Percentiles Percentiles
	// Log, when set, receives one line per notable decision (retry without
	// continuous usage, prompt calibration).
	Log func(msg string)
	// Deployment, when known, is what serves URL (TP, nodes): recorded
	// with the result and the sweep's start, for capacity plans.
	Deployment *phases.Deployment
}

// Scraper reads the server's own figures (its Prometheus /metrics).
type Scraper interface {
	Scrape(ctx context.Context, now time.Time) (phases.ServerStats, error)
}

// GPUSampler samples a host's GPUs (phases/gputel.Sampler): Run until ctx
// ends, emitting its rounds; Level sums up a window; Source says what it
// reads and lacks.
type GPUSampler interface {
	Run(ctx context.Context, em *phases.Emitter) error
	Level(from, to time.Time, outputTokens float64) *phases.GPULevel
	Source() phases.GPUTelSource
}

// shownURL is a URL as it may be printed or recorded: its user and
// password are masked.
func shownURL(raw string) string { return remote.MaskURL(raw) }

// withDefaults checks cfg and fills its defaults; errors name the input.
func (cfg Config) withDefaults() (Config, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return cfg, errors.New("--url: the server URL is required (e.g. http://127.0.0.1:8000)")
	}
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("--url %q: want http://host:port or https://host:port", shownURL(cfg.URL))
	}
	// A base URL given with the /v1 suffix still works.
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	cfg.URL = u.String()
	if err := cfg.checkValues(); err != nil {
		return cfg, err
	}
	if cfg.API == "" {
		cfg.API = APICompletions
	}
	if len(cfg.Concurrency) == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	cfg.Concurrency = slices.Sorted(slices.Values(cfg.Concurrency))
	switch cfg.Path {
	case "", phases.PathDirect, phases.PathSSH, phases.PathHost:
	default:
		return cfg, fmt.Errorf("path %q: want %s, %s or %s", cfg.Path, phases.PathDirect, phases.PathSSH, phases.PathHost)
	}
	if cfg.Requests == 0 && cfg.Duration == 0 {
		cfg.Requests = DefaultRequests
	}
	if cfg.InputLen == 0 {
		cfg.InputLen = DefaultInputLen
	}
	if cfg.OutputLen == 0 {
		cfg.OutputLen = DefaultOutputLen
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.openLoopDefaults()
	if cfg.ClientBoundLag == 0 {
		cfg.ClientBoundLag = 10 * time.Millisecond
	}
	if strings.TrimSpace(cfg.SLO) != "" {
		cfg.slo, _ = ParseSLO(cfg.SLO) // checked above
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	if err := cfg.workload(); err != nil {
		return cfg, err
	}
	return cfg, nil
}
