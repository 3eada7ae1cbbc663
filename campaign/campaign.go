// Package campaign reads and writes the campaign file (profdeck.yaml): what
// is being profiled, where, and with which parameters for each phase.
package campaign

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/localfs"
)

// DefaultPath is where profdeck looks for the campaign file.
const DefaultPath = "profdeck.yaml"

// Campaign is the whole campaign file.
type Campaign struct {
	Name     string `yaml:"name"`     // the campaign's name, in the notebook's title and the cockpit's header
	Notebook string `yaml:"notebook"` // the markdown notebook, relative to the campaign file
	Journal  string `yaml:"journal"`  // the journal of events (default: the notebook's name + .journal.jsonl)
	Host     string `yaml:"host"`     // "sim", "local", or an SSH target ([user@]host[:port] or a ~/.ssh/config alias)
	// Hosts are the nodes of a deployment on several hosts, the head (the
	// API server) first; Host is then the head.
	Hosts   []string `yaml:"hosts"`
	SSH     SSH      `yaml:"ssh"`
	Server  Server   `yaml:"server"`
	Model   Model    `yaml:"model"`
	Load    Load     `yaml:"load"`
	Macro   Macro    `yaml:"macro"`
	Micro   Micro    `yaml:"micro"`
	NCCL    NCCL     `yaml:"nccl"`
	Profile Profile  `yaml:"profile"`
	// Capacity is the traffic to plan replicas and GPUs for.
	Capacity Capacity `yaml:"capacity"`
	// Cost is the price of a GPU-hour, for each variant's cost per million
	// output tokens.
	Cost Cost        `yaml:"cost"`
	Run  RunSettings `yaml:"run"`
	// Variants are server configurations compared against the baseline
	// (server.launch), each served in turn and predicted before it runs:
	// each entry has a name and any of args (flags added to the baseline's
	// launch, each replacing the same flag there), launch (a whole launch
	// line) and env; or a matrix ({--max-num-seqs: [64, 256]}: one variant
	// per value, named max-num-seqs-64 …).
	Variants []Variant `yaml:"variants"`
	Sim      Sim       `yaml:"sim"`

	// Path is the file this campaign was read from (empty for defaults).
	Path string `yaml:"-"`

	root  *yaml.Node        // the file as parsed, for the lines of its keys
	setBy map[string]string // the flag that set a key, by key
}

// SSH options for an SSH host.
type SSH struct {
	Identity         string `yaml:"identity"`
	KnownHosts       string `yaml:"known_hosts"`
	Config           string `yaml:"config"`
	AcceptNewHostKey bool   `yaml:"accept_new_host_key"`
}

// Server is the serving engine under test.
type Server struct {
	URL        string `yaml:"url"`         // e.g. http://127.0.0.1:8000 as seen from the host
	MetricsURL string `yaml:"metrics_url"` // default: URL + /metrics
	APIKeyEnv  string `yaml:"api_key_env"` // environment variable holding the API key (default OPENAI_API_KEY)
	Launch     string `yaml:"launch"`      // launch command (run detached on the host)
	// WorkerLaunch starts the other nodes of a multi-node deployment (e.g.
	// vllm serve … --headless --node-rank $PROFDECK_NODE_RANK).
	WorkerLaunch string `yaml:"worker_launch"`
	// Logs are the log files per node when they differ (else Log on every node).
	Logs        []string          `yaml:"logs"`
	Log         string            `yaml:"log"`          // the server's log file on the host
	Container   string            `yaml:"container"`    // docker container, when the server runs in one
	Env         map[string]string `yaml:"env"`          // extra environment for the launch
	ProfilerDir string            `yaml:"profiler_dir"` // where the torch profiler writes
	Version     string            `yaml:"vllm_version"` // hint, e.g. "0.12"; otherwise read from the log
	// Engine is the serving engine: vllm, sglang, or auto (default: told
	// from the server's log and /metrics, and from the launch command
	// for the simulated deployment).
	Engine string `yaml:"engine"`
}

// Model describes the served model.
type Model struct {
	Name      string  `yaml:"name"`   // the served model's name (default: the first id of /v1/models)
	Config    string  `yaml:"config"` // path to config.json (local, or on the host)
	Preset    string  `yaml:"preset"` // kimi-k2.5, deepseek-v3, qwen3-235b-a22b, llama-3.1-405b
	TP        int     `yaml:"tp"`
	EP        bool    `yaml:"ep"`
	ExpectGiB float64 `yaml:"expect_gib"` // expected weights per GPU
}

// Load phase parameters.
type Load struct {
	StallAfter   Duration `yaml:"stall_after"`
	PollInterval Duration `yaml:"poll_interval"`
}

// Macro phase parameters.
type Macro struct {
	API           string   `yaml:"api"` // completions or chat
	Concurrency   []int    `yaml:"concurrency"`
	Requests      int      `yaml:"requests"`
	Duration      Duration `yaml:"duration"`
	Warmup        int      `yaml:"warmup"`
	InputLen      int      `yaml:"input_len"`
	OutputLen     int      `yaml:"output_len"`
	Rate          float64  `yaml:"rate"`
	StopAtPlateau bool     `yaml:"stop_at_plateau"`
	// NoPreflight skips the one request sent with the sweep's settings
	// before the first level.
	NoPreflight bool `yaml:"no_preflight"`
	// SLO, e.g. "ttft=2s,tpot=50ms,e2el=30s": goodput per level.
	SLO string `yaml:"slo"`
	// Repeat runs each level this many times (means and 95% CIs).
	Repeat int `yaml:"repeat"`
	// Search, concurrency, rate or speed, finds the largest concurrency,
	// request rate or trace replay speed meeting SLO; SearchTolerance is
	// how close its bounds come.
	Search          string  `yaml:"search"`
	SearchTolerance float64 `yaml:"search_tolerance"`
	// Arrivals (poisson or constant) and Burstiness space an open loop's
	// requests; LatencyFrom (sent or intended) is where TTFT and E2EL start.
	Arrivals    string  `yaml:"arrivals"`
	Burstiness  float64 `yaml:"burstiness"`
	LatencyFrom string  `yaml:"latency_from"`
	// Dataset is random (default), sharegpt or jsonl, read from
	// DatasetFile (at most DatasetMax prompts); RangeRatio spreads random
	// lengths; PrefixLen starts every prompt with the same tokens.
	Dataset     string  `yaml:"dataset"`
	DatasetFile string  `yaml:"dataset_file"`
	DatasetMax  int     `yaml:"dataset_max"`
	RangeRatio  float64 `yaml:"range_ratio"`
	PrefixLen   int     `yaml:"prefix_len"`
	// TraceSpeed replays a trace dataset (mooncake, bailian, burstgpt)
	// that many times as fast; TraceStart and TraceDuration cut the window
	// replayed (0: from its start, to its end).
	TraceSpeed    float64  `yaml:"trace_speed"`
	TraceStart    Duration `yaml:"trace_start"`
	TraceDuration Duration `yaml:"trace_duration"`
	// ThinkTime is a multi-turn dataset's (conversations, sessions) wait
	// of each user between an answer and the next turn; SessionHeader the
	// HTTP header that carries the session's id, for routers with session
	// affinity ("": none).
	ThinkTime     Duration `yaml:"think_time"`
	SessionHeader string   `yaml:"session_header"`
	// Loadgen is where the load generator runs: its mode, or the load
	// agents' hosts.
	Loadgen Loadgen `yaml:"loadgen"`
}

// Micro phase parameters.
type Micro struct {
	Batch  []int  `yaml:"batch"`
	Python string `yaml:"python"` // command prefix, e.g. "docker exec -i vllm python3"
}

// NCCL phase parameters.
type NCCL struct {
	NProc    int    `yaml:"nproc"`
	Torchrun string `yaml:"torchrun"`
	Batch    []int  `yaml:"batch"`
	// Env is passed to torchrun on every node (NCCL_SOCKET_IFNAME, NCCL_IB_HCA …).
	Env map[string]string `yaml:"env"`
	// MasterAddr is the head's address as the other nodes reach it
	// (default: the head's host name); MasterPort torchrun's rendezvous port
	// (default DefaultMasterPort): 0 is the key left out (a 0 given is
	// refused), so a campaign written out omits it.
	MasterAddr string `yaml:"master_addr"`
	MasterPort int    `yaml:"master_port,omitempty"` // torchrun's rendezvous port across the nodes
}

// Profile phase parameters.
type Profile struct {
	// Requests is deprecated and unused: each level's window is bounded by
	// Steps. The key is still accepted so older campaigns load.
	Requests int `yaml:"requests"`
	// Steps is how many engine steps each level's capture window records.
	Steps int `yaml:"steps"`
}

// Duration is a time.Duration written as "5m", "90s".
type Duration struct{ time.Duration }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 90s, 5m)", n.Line, n.Value)
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.Duration.String(), nil }

// DefaultProfilerDir is the server's torch profiler directory when the
// campaign names none: the restart with the profiler writes there and the
// capture reads there. It is the user's own ({uid} is the host user's
// uid): on a host shared with others, one /tmp/vllm_profile would be the
// first user's, and another's traces could be read as this server's.
const DefaultProfilerDir = "/tmp/vllm_profile-" + remote.UID

// Defaults returns a campaign with every default filled in.
func Defaults() *Campaign {
	return &Campaign{
		Name:     "campaign",
		Notebook: "campaign.md",
		Host:     "local",
		Server:   Server{URL: "http://127.0.0.1:8000", APIKeyEnv: "OPENAI_API_KEY", ProfilerDir: DefaultProfilerDir, Engine: EngineAuto},
		Model:    Model{TP: 8},
		Load:     Load{StallAfter: Duration{DefaultStallAfter}, PollInterval: Duration{DefaultPollInterval}},
		Macro: Macro{API: macro.APICompletions, Concurrency: slices.Clone(DefaultConcurrency),
			Requests: DefaultRequests, Warmup: DefaultWarmup, InputLen: DefaultInputLen, OutputLen: DefaultOutputLen,
			Repeat: 1, Loadgen: Loadgen{Mode: "here"}, SearchTolerance: DefaultSearchTolerance, Arrivals: macro.ArrivalsPoisson,
			Burstiness: DefaultBurstiness, LatencyFrom: macro.LatencySent, TraceSpeed: 1},
		Micro:    Micro{Batch: slices.Clone(DefaultBatch), Python: DefaultPython},
		NCCL:     NCCL{Torchrun: DefaultTorchrun, Batch: slices.Clone(DefaultBatch)}, // nproc 0: the TP size per node
		Profile:  Profile{Steps: DefaultProfileSteps},
		Capacity: Capacity{Headroom: DefaultHeadroom},
		Run:      RunSettings{LeaveServer: "serving"},
		Sim:      Sim{Nodes: 1, ProfilerFlush: Duration{DefaultSimProfilerFlush}},
	}
}

// LoadFile reads the campaign file at path over the defaults. Unknown keys and
// bad values are errors naming the key and line. Relative notebook and
// journal paths are taken relative to the file's directory, and a leading ~/
// in the SSH paths is the home directory.
func LoadFile(path string) (*Campaign, error) {
	f, err := localfs.OpenInput(path) // a FIFO would block, a device never end
	if err != nil {
		return nil, fmt.Errorf("campaign file: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("campaign file: %w", err)
	}
	if len(b) > MaxFile {
		return nil, fmt.Errorf("%s: over %d KiB: not a campaign file", path, MaxFile>>10)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Path = path
	dir := filepath.Dir(path)
	for _, p := range []*string{&c.Notebook, &c.Journal} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for _, p := range []*string{&c.SSH.Identity, &c.SSH.KnownHosts, &c.SSH.Config} {
		*p = expandHome(*p)
	}
	return c, nil
}

func expandHome(p string) string {
	rest, ok := strings.CutPrefix(p, "~/")
	if !ok {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, rest)
}

// MaxFile is the largest campaign file read (one is a few kB).
const MaxFile = 1 << 20

// Parse reads a campaign from YAML text over the defaults.
func Parse(b []byte) (*Campaign, error) {
	c := Defaults()
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, cleanYAMLError(err, nil)
	}
	if err := checkKeys(&root); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, cleanYAMLError(err, &root)
	}
	// A time budget per level replaces the default request count; a count
	// written next to it stays: the level ends at whichever comes last.
	if c.Macro.Duration.Duration > 0 && lineOf(&root, "macro.requests") == 0 {
		c.Macro.Requests = 0
	}
	c.root = &root
	c.normalizeHosts()
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c, nil
}

var (
	reLine      = regexp.MustCompile(`line (\d+): `)
	reUnmarshal = regexp.MustCompile("cannot unmarshal !!(\\w+) (`[^`]*`)? ?into (\\S+)")
)

// describeType says in words what a Go type of the campaign holds.
func describeType(t string) string {
	switch {
	case t == "int":
		return "a whole number"
	case t == "float64":
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "text"
	case t == "[]int":
		return "a list of whole numbers (e.g. [1, 8, 64])"
	case strings.HasPrefix(t, "map["):
		return "a mapping of NAME: value lines"
	case strings.HasPrefix(t, "campaign."):
		return "a section of key: value lines"
	}
	return "a " + t
}

// cleanYAMLError makes a decoder error readable, one problem per line, and
// names the key of each line it mentions.
func cleanYAMLError(err error, root *yaml.Node) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	msg = strings.TrimSpace(strings.ReplaceAll(msg, "in type campaign.", "in section "))
	msg = reUnmarshal.ReplaceAllStringFunc(msg, func(m string) string {
		g := reUnmarshal.FindStringSubmatch(m)
		what := g[2]
		if what == "" {
			what = map[string]string{"seq": "a list", "map": "a mapping"}[g[1]]
			if what == "" {
				what = "this value"
			}
		}
		return what + " is not " + describeType(g[3])
	})
	if root != nil {
		msg = reLine.ReplaceAllStringFunc(msg, func(m string) string {
			n, _ := strconv.Atoi(reLine.FindStringSubmatch(m)[1])
			if key := keyAt(root, n); key != "" {
				return fmt.Sprintf("line %d: %s: ", n, key)
			}
			return m
		})
	}
	return errors.New(msg)
}

// JournalPath is the journal file: the configured one, or the notebook's
// name with .journal.jsonl.
func (c *Campaign) JournalPath() string {
	if c.Journal != "" {
		return c.Journal
	}
	nb := c.Notebook
	if nb == "" {
		nb = "campaign.md"
	}
	return strings.TrimSuffix(nb, filepath.Ext(nb)) + ".journal.jsonl"
}
