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

// Config is what one sweep does. The sweep fills in no default: every
// value it needs is given (Validate says which is missing); the campaign
// (package campaign) is where the defaults live.
type Config struct {
	URL         string        // server base URL, e.g. http://127.0.0.1:8000
	Model       string        // "": the first id from /v1/models
	API         string        // APICompletions or APIChat
	Concurrency []int         // levels (not used by one open-loop level, Rate > 0)
	Requests    int           // measured requests per level (at least 2×C; 0 only with Duration)
	Duration    time.Duration // measured time per level; with Requests too, the level ends at whichever comes last
	Warmup      int           // requests per level sent before the measured ones, not counted
	InputLen    int           // prompt tokens
	OutputLen   int           // output tokens, fixed with ignore_eos and min_tokens (at least 2)
	Rate        float64       // >0: one open-loop level at Rate req/s (arrivals as Arrivals says)
	// MaxInFlight caps an open loop's requests in flight, as vLLM bench
	// serve's --max-concurrency with --request-rate: an arrival past the
	// cap waits for a request to end (its wait is send lag). 0: no cap
	// but MaxOpenInFlight.
	MaxInFlight int
	// Arrivals is how an open loop spaces its requests: ArrivalsPoisson
	// (gaps drawn from a gamma distribution of shape Burstiness, as vLLM
	// bench serve's --burstiness, 1 being Poisson) or ArrivalsConstant
	// (every 1/Rate seconds). Both are needed by an open loop only.
	Arrivals   string
	Burstiness float64
	// LatencyFrom is where TTFT and E2EL start: LatencySent (the request's
	// actual send) or LatencyIntended (its intended send time: the
	// coordinated-omission correction, a late client's wait counted).
	LatencyFrom string
	// Search, phases.SearchConcurrency or phases.SearchRate, finds the
	// largest concurrency or rate meeting SLO (which it needs) instead of
	// running the levels once each; SearchTolerance is how close its bounds
	// must come, SearchFrom a rate search's first rung in req/s (the rungs
	// double from there).
	Search          string
	SearchTolerance float64
	SearchFrom      float64
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
	// Gaps has each JSONL record carry the request's inter-token gaps
	// (itl_ms, chunk_gaps_ms), as vLLM's detailed results carry itls.
	Gaps bool
	// Observe, when set, is called with each finished request's record
	// (warm-up ones too) as it ends, before JSONL gets it; the record's
	// gaps are there (Record.EachGap) whether or not Gaps is set.
	Observe func(*Record)
	// Scraper, when set, is polled once a second for the server's own figures.
	Scraper Scraper
	// GPU, when set, samples the host's GPUs for the sweep's length; each
	// level gets their figures over its throughput window.
	GPU GPUSampler
	// Timeout bounds one request from send to its last byte.
	Timeout time.Duration
	// ClientBoundLag is the p99 send lag above which a level is flagged
	// client_bound.
	ClientBoundLag time.Duration
	// Seed makes prompts and arrival times repeatable; 0 draws one from
	// the clock (the result records it).
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
	// Dataset is random ("" too), sharegpt or jsonl, read from
	// DatasetFile (at most DatasetMax prompts, a seeded sample), or a trace
	// (mooncake, bailian, burstgpt) replayed on its own schedule: its
	// window from TraceStart for TraceDuration (0: to its end), TraceSpeed
	// times as fast (0: 1).
	Dataset       string
	DatasetFile   string
	DatasetMax    int
	TraceSpeed    float64
	TraceStart    time.Duration
	TraceDuration time.Duration
	trace         *traceFeed
	// A multi-turn dataset (conversations: a ShareGPT list sent turn by
	// turn; sessions: a JSONL of turns) makes each concurrency level that
	// many users, each running sessions whose turns send the history with
	// the server's real answers; ThinkTime is a user's wait between an
	// answer and the next turn (a turn's own think_time_ms replaces it);
	// SessionHeader, when set, names the header that carries the session's
	// id (for routers with session affinity).
	ThinkTime     time.Duration
	SessionHeader string
	conv          *convFeed
	// Shard of Shards (Shards > 1) is this client's share of a schedule
	// made for Shards load agents: every agent makes the same schedule
	// (one seed) and sends the arrivals (with their trace rows or
	// prompts) Shard, Shard+Shards, …, and starts the sessions Shard+1,
	// Shard+1+Shards, … of the sweep; every turn of a session is its.
	Shard, Shards int
	// RangeRatio spreads random prompt and output lengths uniformly over
	// ±RangeRatio of InputLen and OutputLen, as vLLM's --random-range-ratio.
	RangeRatio float64
	// PrefixLen starts every prompt with the same PrefixLen tokens.
	PrefixLen int
	ds        *dataset
	// Repeat runs each level this many times (1 to 100); with more than
	// one, its figures are the runs' means, with 95% confidence intervals.
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

// Validate checks that cfg is complete and that each value is in range,
// before any work; the error names the field. A caller that maps a flag or
// a campaign key to a field checks the value first, naming what it maps.
func (cfg Config) Validate() error {
	if _, err := cfg.baseURL(); err != nil {
		return err
	}
	if err := cfg.checkRequired(); err != nil {
		return err
	}
	if err := cfg.checkValues(); err != nil {
		return err
	}
	switch cfg.Path {
	case "", phases.PathDirect, phases.PathSSH, phases.PathHost:
	default:
		return fmt.Errorf("Path %q: want %s, %s or %s", cfg.Path, phases.PathDirect, phases.PathSSH, phases.PathHost)
	}
	return nil
}

// baseURL is cfg.URL as the client uses it: http or https, with no
// trailing slash or /v1 (a base URL given with /v1 still works).
func (cfg Config) baseURL() (string, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return "", errors.New("URL: the server URL is required (e.g. http://127.0.0.1:8000)")
	}
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL %q: want http://host:port or https://host:port", shownURL(cfg.URL))
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	return u.String(), nil
}

// openLoop reports whether the sweep paces its requests by a schedule
// (one open-loop level, or a rate search).
func (cfg Config) openLoop() bool {
	return cfg.Rate > 0 || cfg.Search == phases.SearchRate || cfg.Search == phases.SearchSpeed
}

// checkRequired refuses a value the sweep needs and was not given (0 or
// empty); each error names the field.
func (cfg Config) checkRequired() error {
	missing := func(field, want string) error { return fmt.Errorf("%s: not set: want %s", field, want) }
	switch {
	case cfg.API == "":
		return missing("API", APICompletions+" or "+APIChat)
	case len(cfg.Concurrency) == 0 && (cfg.Rate == 0 || cfg.Search == phases.SearchConcurrency):
		return missing("Concurrency", "at least one level (e.g. 1,8,64)")
	case cfg.Requests == 0 && cfg.Duration == 0:
		return missing("Requests", "the measured requests per level, or a Duration")
	case cfg.InputLen == 0:
		return missing("InputLen", "the prompt's tokens")
	case cfg.OutputLen == 0:
		return missing("OutputLen", "the output tokens (at least 2)")
	case cfg.Timeout == 0:
		return missing("Timeout", "the limit for one request")
	case cfg.ClientBoundLag <= 0:
		return missing("ClientBoundLag", "the p99 send lag that flags a level client bound")
	case cfg.Repeat == 0:
		return missing("Repeat", "1 to 100 runs per level")
	case cfg.LatencyFrom == "":
		return missing("LatencyFrom", LatencySent+" or "+LatencyIntended)
	case cfg.openLoop() && cfg.Arrivals == "":
		return missing("Arrivals", ArrivalsPoisson+" or "+ArrivalsConstant+" (an open loop's schedule)")
	case cfg.openLoop() && cfg.Burstiness == 0:
		return missing("Burstiness", "more than 0 (1 is Poisson; an open loop's schedule)")
	case cfg.Search != "" && cfg.SearchTolerance == 0:
		return missing("SearchTolerance", "more than 0 and under 1 (e.g. 0.05)")
	case cfg.Search == phases.SearchRate && cfg.SearchFrom <= 0:
		return missing("SearchFrom", "a rate search's first rung in req/s")
	}
	return nil
}

// prepared is a valid cfg ready to run: its URL as the client uses it,
// its levels in order, its SLO parsed, its seed drawn when none was given
// and its workload made.
func (cfg Config) prepared() (Config, error) {
	if err := cfg.traceLevel(); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	cfg.URL, _ = cfg.baseURL() // checked above
	cfg.Concurrency = slices.Sorted(slices.Values(cfg.Concurrency))
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
