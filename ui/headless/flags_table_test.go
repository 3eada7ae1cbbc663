package headless

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/kubejob"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/report"
)

// flagsCampaign sets every key a flag can set to a value no flag below
// gives and no default has, so that a flag that does not win shows.
const flagsCampaign = `host: sim
notebook: nb.md
ssh:
  identity: /keys/id
  known_hosts: /keys/kh
  config: /keys/cfg
  accept_new_host_key: true
server:
  url: http://127.0.0.1:8011
  metrics_url: http://127.0.0.1:8011/m
  log: /logs/s.log
  profiler_dir: /prof
  engine: vllm
model:
  preset: kimi-k2.5
  tp: 4
  ep: true
  expect_gib: 70
load:
  stall_after: 90s
  poll_interval: 2s
macro:
  api: chat
  concurrency: [1, 8]
  requests: 9
  warmup: 7
  input_len: 100
  output_len: 50
  rate: 3
  stop_at_plateau: true
  no_preflight: true
  slo: ttft=2s
  repeat: 2
  dataset_max: 5
  range_ratio: 0.2
  prefix_len: 16
  search: rate
  search_tolerance: 0.2
  arrivals: poisson
  burstiness: 2
  latency_from: intended
micro:
  batch: [1, 8]
  python: python3.11
nccl:
  nproc: 2
  torchrun: torchrun2
  batch: [2, 16]
profile:
  steps: 30
  requests: 3
`

// flagsSim is added to flagsCampaign for the sim flags.
const flagsSim = `sim:
  load_time: 9s
  stall_at_gib: 60
  fail: oom
`

// resolved is what a command made of its flags and the campaign, before
// it opens a host.
type resolved struct {
	cmd       *Command
	camp      *campaign.Campaign
	sweep     macro.Config
	sweepF    *sweepFlags
	load      load.Config
	gpu       gpuSettings
	gpuF      *gpuFlags
	micro     micro.Config
	nccl      nccl.Config
	profile   profile.Config
	run       Options
	fromStart bool
	capacity  report.CapacityAsk
	manifest  kubejob.Options
}

// flagCommands are the headless commands whose flags the table covers:
// each makes its command and resolves its arguments as its Main does.
var flagCommands = map[string]struct {
	flags   func() *flag.FlagSet
	resolve func(args []string) (resolved, error)
}{
	"sweep": {func() *flag.FlagSet { c, _ := newSweep(io.Discard, io.Discard); return c.Flags },
		func(args []string) (resolved, error) {
			c, f := newSweep(io.Discard, io.Discard)
			if err := c.Parse(datasetArgs(args)); err != nil {
				return resolved{}, err
			}
			cfg, camp, err := f.plan(c)
			return resolved{cmd: c, camp: camp, sweep: cfg, sweepF: f}, err
		}},
	"load": {func() *flag.FlagSet { c, _ := newLoad(io.Discard, io.Discard); return c.Flags },
		func(args []string) (resolved, error) {
			c, f := newLoad(io.Discard, io.Discard)
			if err := c.Parse(args); err != nil {
				return resolved{}, err
			}
			cfg, camp, err := f.plan(c)
			return resolved{cmd: c, camp: camp, load: cfg}, err
		}},
	"micro": {func() *flag.FlagSet { return newMicro(io.Discard, io.Discard).c.Flags },
		func(args []string) (resolved, error) {
			m := newMicro(io.Discard, io.Discard)
			if err := m.c.Parse(args); err != nil {
				return resolved{}, err
			}
			camp, set, cfg, err := m.plan()
			return resolved{cmd: m.c, camp: camp, gpu: set, gpuF: m.g, micro: cfg}, err
		}},
	"nccl": {func() *flag.FlagSet { return newNCCL(io.Discard, io.Discard).c.Flags },
		func(args []string) (resolved, error) {
			n := newNCCL(io.Discard, io.Discard)
			if err := n.c.Parse(args); err != nil {
				return resolved{}, err
			}
			camp, set, cfg, err := n.plan()
			return resolved{cmd: n.c, camp: camp, gpu: set, gpuF: n.g, nccl: cfg}, err
		}},
	"profile": {func() *flag.FlagSet { c, _ := newProfile(io.Discard, io.Discard); return c.Flags },
		func(args []string) (resolved, error) {
			c, f := newProfile(io.Discard, io.Discard)
			if err := c.Parse(args); err != nil {
				return resolved{}, err
			}
			cfg, camp, err := f.plan(c)
			return resolved{cmd: c, camp: camp, profile: cfg}, err
		}},
	"tail": {func() *flag.FlagSet { c, _ := newTail(io.Discard, io.Discard); return c.Flags },
		func(args []string) (resolved, error) {
			c, fromStart := newTail(io.Discard, io.Discard)
			if _, err := c.ParseFiles(append(args, "/var/log/x.log"), 1); err != nil {
				return resolved{}, err
			}
			camp, err := tailPlan(c)
			return resolved{cmd: c, camp: camp, fromStart: *fromStart}, err
		}},
	"doctor": {func() *flag.FlagSet { return New("doctor", doctorUsage, io.Discard, io.Discard).Flags },
		func(args []string) (resolved, error) {
			c := New("doctor", doctorUsage, io.Discard, io.Discard)
			if err := c.Parse(args); err != nil {
				return resolved{}, err
			}
			camp, _, _, err := doctorPlan(c)
			return resolved{cmd: c, camp: camp}, err
		}},
	"capacity": {func() *flag.FlagSet { c, _ := newCapacity(io.Discard, io.Discard); return c.Flags },
		func(args []string) (resolved, error) {
			c, resolve := newCapacity(io.Discard, io.Discard)
			ask, _, err := resolve(args)
			return resolved{cmd: c, capacity: ask}, err
		}},
	"loadgen-manifest": {func() *flag.FlagSet { c, _ := newManifest(io.Discard, io.Discard); return c.Flags },
		func(args []string) (resolved, error) {
			c, resolve := newManifest(io.Discard, io.Discard)
			// What the command needs, given first: the row's flags win.
			need := []string{"--url", "http://vllm.bench.svc:8000", "--agents", "3", "--image", "reg/pd:1", "--coordinator", "10.0.0.5:7070"}
			o, err := resolve(append(need, args...))
			return resolved{cmd: c, manifest: o}, err
		}},
	"run": {func() *flag.FlagSet { c, _ := newRun(io.Discard, io.Discard); return c.Flags },
		func(args []string) (resolved, error) {
			c, f := newRun(io.Discard, io.Discard)
			if err := c.Parse(args); err != nil {
				return resolved{}, err
			}
			camp, o, err := f.plan(c)
			return resolved{cmd: c, camp: camp, run: o}, err
		}},
}

// flagRow is one flag given with one value over flagsCampaign: what the
// command then holds (get) must be want, or the command refuses it as bad
// input naming the flag (wantErr).
type flagRow struct {
	cmds    string // space-separated commands the row runs for
	args    []string
	sim     bool // the campaign has a sim section
	get     func(r resolved) any
	want    any
	wantErr string
}

// flagRows covers every flag of every command in flagCommands (the test
// fails for a flag no row names). Zero, empty and false values are given
// wherever the flag takes them; where the value cannot mean anything, it is
// refused, never replaced by the campaign's or a default.
func flagRows(dir string) []flagRow {
	jsonl := filepath.Join(dir, "prompts.jsonl")
	all := "sweep load micro nccl profile tail run doctor"
	return []flagRow{
		// The shared flags.
		{cmds: all, args: []string{"--host", "local"}, get: func(r resolved) any { return r.camp.Host }, want: "local"},
		{cmds: all, args: []string{"--host", ""}, wantErr: "--host: "},
		{cmds: all, args: []string{"--json", filepath.Join(dir, "out.json")}, get: func(r resolved) any { return r.cmd.JSONPath }, want: filepath.Join(dir, "out.json")},
		{cmds: all, args: []string{"--jsonl", filepath.Join(dir, "out.jsonl")}, get: func(r resolved) any { return r.cmd.JSONLPath }, want: filepath.Join(dir, "out.jsonl")},
		// sweep
		{cmds: "sweep load", args: []string{"--url", "http://10.0.0.9:9000"}, get: func(r resolved) any { return r.camp.Server.URL }, want: "http://10.0.0.9:9000"},
		{cmds: "sweep load", args: []string{"--url", ""}, wantErr: "--url: must be set"},
		{cmds: "sweep", args: []string{"--model", ""}, get: func(r resolved) any { return r.sweep.Model }, want: ""},
		{cmds: "sweep", args: []string{"--model", "m2"}, get: func(r resolved) any { return r.sweep.Model }, want: "m2"},
		{cmds: "sweep", args: []string{"--api", "completions"}, get: func(r resolved) any { return r.sweep.API }, want: "completions"},
		{cmds: "sweep", args: []string{"--api", ""}, wantErr: "--api: must be completions or chat"},
		{cmds: "sweep", args: []string{"--rate", "0", "--concurrency", "2,4"}, get: func(r resolved) any { return r.sweep.Concurrency }, want: []int{2, 4}},
		{cmds: "sweep", args: []string{"--rate", "0", "--concurrency", "0"}, wantErr: "--concurrency: "},
		{cmds: "sweep", args: []string{"--requests", "0"}, wantErr: "--requests and macro.duration: both 0, so nothing ends a level"},
		{cmds: "sweep", args: []string{"--requests", "0", "--duration", "30s"}, get: func(r resolved) any { return [2]any{r.sweep.Requests, r.sweep.Duration} }, want: [2]any{0, 30 * time.Second}},
		{cmds: "sweep", args: []string{"--requests", "0", "--duration", "0s"}, wantErr: "--requests and --duration: both 0, so nothing ends a level"},
		{cmds: "sweep", args: []string{"--requests", "5"}, get: func(r resolved) any { return [2]any{r.sweep.Requests, r.sweep.Duration} }, want: [2]any{5, time.Duration(0)}},
		{cmds: "sweep", args: []string{"--duration", "30s"}, get: func(r resolved) any { return [2]any{r.sweep.Requests, r.sweep.Duration} }, want: [2]any{0, 30 * time.Second}},
		{cmds: "sweep", args: []string{"--duration", "0s"}, get: func(r resolved) any { return [2]any{r.sweep.Requests, r.sweep.Duration} }, want: [2]any{9, time.Duration(0)}}, // no time bound: the file's count
		{cmds: "sweep", args: []string{"--warmup", "0"}, get: func(r resolved) any { return r.sweep.Warmup }, want: 0},
		{cmds: "sweep", args: []string{"--input-len", "0"}, wantErr: "--input-len: want 1 to"},
		{cmds: "sweep", args: []string{"--input-len", "64"}, get: func(r resolved) any { return r.sweep.InputLen }, want: 64},
		{cmds: "sweep", args: []string{"--output-len", "0"}, wantErr: "--output-len: want 2"},
		{cmds: "sweep", args: []string{"--output-len", "2"}, get: func(r resolved) any { return r.sweep.OutputLen }, want: 2},
		{cmds: "sweep", args: []string{"--rate", "0"}, get: func(r resolved) any { return r.sweep.Rate }, want: 0.0},
		{cmds: "sweep", args: []string{"--stop-at-plateau=false"}, get: func(r resolved) any { return r.sweep.StopAtPlateau }, want: false},
		{cmds: "sweep", args: []string{"--no-preflight=false"}, get: func(r resolved) any { return r.sweep.NoPreflight }, want: false},
		{cmds: "sweep", args: []string{"--timeout", "90s"}, get: func(r resolved) any { return r.sweep.Timeout }, want: 90 * time.Second},
		{cmds: "sweep", args: []string{"--timeout", "0s"}, wantErr: "--timeout: must be more than 0"},
		{cmds: "sweep", args: []string{"--slo", "", "--search", ""}, get: func(r resolved) any { return r.sweep.SLO }, want: ""},
		{cmds: "sweep", args: []string{"--dataset", "jsonl", jsonl}, get: func(r resolved) any { return [2]string{r.sweep.Dataset, r.sweep.DatasetFile} }, want: [2]string{"jsonl", jsonl}},
		{cmds: "sweep", args: []string{"--dataset", ""}, get: func(r resolved) any { return r.sweep.Dataset }, want: ""},
		{cmds: "sweep", args: []string{"--dataset", "jsonl", "--dataset-file", ""}, wantErr: "--dataset-file: dataset jsonl needs a file"},
		{cmds: "sweep", args: []string{"--dataset-max", "0"}, get: func(r resolved) any { return r.sweep.DatasetMax }, want: 0},
		{cmds: "sweep", args: []string{"--range-ratio", "0"}, get: func(r resolved) any { return r.sweep.RangeRatio }, want: 0.0},
		{cmds: "sweep", args: []string{"--prefix-len", "0"}, get: func(r resolved) any { return r.sweep.PrefixLen }, want: 0},
		{cmds: "sweep", args: []string{"--sim-mode", "kv"}, get: func(r resolved) any { return r.sweepF.emu.KVCacheTokens }, want: 8192},
		{cmds: "sweep", args: []string{"--sim-mode", "nope"}, wantErr: "--sim-mode: "},
		{cmds: "sweep", args: []string{"--repeat", "0"}, wantErr: "--repeat: want 1 to 100"},
		{cmds: "sweep", args: []string{"--repeat", "1"}, get: func(r resolved) any { return r.sweep.Repeat }, want: 1},
		{cmds: "sweep", args: []string{"--seed", "7"}, get: func(r resolved) any { return r.sweep.Seed }, want: int64(7)},
		{cmds: "sweep", args: []string{"--trace-speed", "2.5"}, get: func(r resolved) any { return r.sweep.TraceSpeed }, want: 2.5},
		{cmds: "sweep", args: []string{"--trace-speed", "0"}, wantErr: "--trace-speed: want more than 0"},
		{cmds: "sweep", args: []string{"--think-time", "2s"}, get: func(r resolved) any { return r.sweep.ThinkTime }, want: 2 * time.Second},
		{cmds: "sweep", args: []string{"--think-time", "2h"}, wantErr: "--think-time: want 0 to 1h0m0s"},
		{cmds: "sweep", args: []string{"--session-header", "X-Session-ID"}, get: func(r resolved) any { return r.sweep.SessionHeader }, want: "X-Session-ID"},
		{cmds: "sweep", args: []string{"--session-header", "X Session"}, wantErr: "not a header name"},
		{cmds: "sweep", args: []string{"--users", "3,5", "--dataset", "sessions", "--dataset-file", "sessions.jsonl", "--rate", "0", "--search", "", "--range-ratio", "0", "--prefix-len", "0"}, get: func(r resolved) any { return r.sweep.Concurrency }, want: []int{3, 5}},
		{cmds: "sweep", args: []string{"--users", "3"}, wantErr: "--users: users run sessions"},
		{cmds: "sweep", args: []string{"--trace-start", "90s"}, get: func(r resolved) any { return r.sweep.TraceStart }, want: 90 * time.Second},
		{cmds: "sweep", args: []string{"--trace-duration", "1m"}, get: func(r resolved) any { return r.sweep.TraceDuration }, want: time.Minute},
		{cmds: "sweep", args: []string{"--metrics-url", "off"}, get: func(r resolved) any { return r.camp.MetricsURL() }, want: ""},
		{cmds: "sweep", args: []string{"--metrics-url", ""}, get: func(r resolved) any { return r.camp.MetricsURL() }, want: "http://127.0.0.1:8011/metrics"},
		{cmds: "sweep profile run", args: []string{"--loadgen", "host"}, get: func(r resolved) any { return r.camp.Macro.Loadgen.Mode }, want: "host"},
		{cmds: "sweep profile run", args: []string{"--loadgen", ""}, get: func(r resolved) any { return r.camp.Macro.Loadgen.Mode }, want: ""},
		{cmds: "sweep run", args: []string{"--loadgen-hosts", "gen1:2,gen2"}, get: func(r resolved) any { return r.camp.Macro.Loadgen.Hosts.String() }, want: "gen1:2,gen2:1"},
		{cmds: "run", args: []string{"--order", "classic"}, get: func(r resolved) any { return r.camp.RunOrder() }, want: "classic"},
		{cmds: "run", args: []string{"--order", "sideways"}, wantErr: "--order: must be one-load or classic"},
		{cmds: "sweep", args: []string{"--api-key", ""}, get: func(r resolved) any { return r.sweep.APIKey }, want: ""},
		{cmds: "sweep", args: []string{"--search", ""}, get: func(r resolved) any { return r.sweep.Search }, want: ""},
		{cmds: "sweep", args: []string{"--search", "concurrency"}, get: func(r resolved) any { return r.sweep.Search }, want: "concurrency"},
		{cmds: "sweep", args: []string{"--search", "latency"}, wantErr: "--search: "},
		{cmds: "sweep", args: []string{"--search", "rate", "--slo", ""}, wantErr: "--search: a search needs an SLO"},
		{cmds: "sweep", args: []string{"--search-tolerance", "0.1"}, get: func(r resolved) any { return r.sweep.SearchTolerance }, want: 0.1},
		{cmds: "sweep", args: []string{"--search-tolerance", "0"}, wantErr: "--search-tolerance: 0: want more than 0"},
		{cmds: "sweep", args: []string{"--arrivals", "constant", "--burstiness", "1"}, get: func(r resolved) any { return [2]any{r.sweep.Arrivals, r.sweep.Burstiness} }, want: [2]any{"constant", 1.0}},
		{cmds: "sweep", args: []string{"--arrivals", ""}, wantErr: "--arrivals: "},
		{cmds: "sweep", args: []string{"--burstiness", "0.5"}, get: func(r resolved) any { return r.sweep.Burstiness }, want: 0.5},
		{cmds: "sweep", args: []string{"--burstiness", "0"}, wantErr: "--burstiness: 0: want more than 0"},
		{cmds: "sweep", args: []string{"--latency-from", "sent"}, get: func(r resolved) any { return r.sweep.LatencyFrom }, want: "sent"},
		{cmds: "sweep", args: []string{"--latency-from", ""}, wantErr: "--latency-from: "},
		// vllm bench serve's names: each wins as its flag does.
		{cmds: "sweep", args: []string{"--max-concurrency", "8"}, get: func(r resolved) any { return r.sweep.Concurrency }, want: []int{8}},
		{cmds: "sweep", args: []string{"--rate", "0", "--max-concurrency", "0"}, wantErr: "--max-concurrency: "},
		{cmds: "sweep", args: []string{"--num-prompts", "5"}, get: func(r resolved) any { return [2]any{r.sweep.Requests, r.sweep.Duration} }, want: [2]any{5, time.Duration(0)}},
		{cmds: "sweep", args: []string{"--num-prompts", "0"}, wantErr: "--num-prompts and macro.duration: both 0"},
		{cmds: "sweep", args: []string{"--request-rate", "inf"}, get: func(r resolved) any { return r.sweep.Rate }, want: 0.0},
		{cmds: "sweep", args: []string{"--random-input-len", "64"}, get: func(r resolved) any { return r.sweep.InputLen }, want: 64},
		{cmds: "sweep", args: []string{"--random-output-len", "0"}, wantErr: "--random-output-len: want 2"},
		{cmds: "sweep", args: []string{"--random-range-ratio", "0"}, get: func(r resolved) any { return r.sweep.RangeRatio }, want: 0.0},
		{cmds: "sweep", args: []string{"--random-prefix-len", "0"}, get: func(r resolved) any { return r.sweep.PrefixLen }, want: 0},
		{cmds: "sweep", args: []string{"--dataset-name", ""}, get: func(r resolved) any { return r.sweep.Dataset }, want: ""},
		{cmds: "sweep", args: []string{"--dataset-path", jsonl, "--dataset", "jsonl"}, get: func(r resolved) any { return r.sweep.DatasetFile }, want: jsonl},
		{cmds: "sweep", args: []string{"--percentile-metrics", "ttft", "--metric-percentiles", "95"}, get: func(r resolved) any { return r.sweep.Percentiles }, want: macro.Percentiles{Metrics: []string{"ttft"}, Of: []float64{95}}},
		{cmds: "sweep", args: []string{"--metric-percentiles", ""}, get: func(r resolved) any { return r.sweep.Percentiles.Of }, want: []float64(nil)},
		{cmds: "sweep", args: []string{"--result-filename", filepath.Join(dir, "r.json")}, get: func(r resolved) any { return r.cmd.JSONPath }, want: filepath.Join(dir, "r.json")},
		// load
		{cmds: "load", args: []string{"--log", "/l/x.log"}, get: func(r resolved) any { return [2]string{r.load.LogPath, r.load.PIDFile} }, want: [2]string{"/l/x.log", "/l/x.log.pid"}},
		{cmds: "load", args: []string{"--log", ""}, get: func(r resolved) any { return r.load.LogPath }, want: campaign.DefaultLogPath},
		{cmds: "load", args: []string{"--expect-gib", "0"}, get: func(r resolved) any { return r.load.ExpectGiB }, want: 0.0},
		{cmds: "load", args: []string{"--stall-after", "0s"}, wantErr: "--stall-after: must be more than 0"},
		{cmds: "load", args: []string{"--stall-after", "30s"}, get: func(r resolved) any { return r.load.StallAfter }, want: 30 * time.Second},
		{cmds: "load", args: []string{"--poll", "0s"}, wantErr: "--poll: must be more than 0"},
		{cmds: "load", args: []string{"--poll", "500ms"}, get: func(r resolved) any { return r.load.Poll }, want: 500 * time.Millisecond},
		{cmds: "load", args: []string{"--every", "0s"}, wantErr: "--every: must be more than 0"},
		{cmds: "load", args: []string{"--engine", "sglang"}, get: func(r resolved) any { return r.load.Engine }, want: "sglang"},
		{cmds: "load", args: []string{"--engine", "auto"}, get: func(r resolved) any { return r.load.Engine }, want: "auto"},
		{cmds: "load", args: []string{"--engine", ""}, get: func(r resolved) any { return r.load.Engine }, want: "auto"}, // "" is auto, not the campaign's vllm
		{cmds: "load", args: []string{"--engine", "tgi"}, wantErr: "--engine: must be vllm, sglang or auto"},
		{cmds: "load", args: []string{"--sim-load-time", "5s"}, sim: true, get: func(r resolved) any { return r.camp.HostOptions().Sim.LoadTime }, want: 5 * time.Second},
		{cmds: "load", args: []string{"--sim-stall-at", "0"}, sim: true, get: func(r resolved) any { return r.camp.HostOptions().Sim.StallAtGiB }, want: 0.0},
		{cmds: "load", args: []string{"--sim-fail", ""}, sim: true, get: func(r resolved) any { return r.camp.HostOptions().Sim.FailWith }, want: ""},
		{cmds: "load", args: []string{"--host", "local", "--sim-fail", "oom"}, wantErr: "--sim-fail: applies to host: sim only"},
		// micro and nccl
		{cmds: "micro nccl", args: []string{"--model-config", "deepseek-v3"}, get: func(r resolved) any { return r.gpu.spec }, want: "deepseek-v3"},
		{cmds: "micro nccl", args: []string{"--model-config", ""}, get: func(r resolved) any { return r.gpu.spec }, want: "kimi-k2.5"},
		{cmds: "micro nccl", args: []string{"--tp", "0"}, wantErr: "--tp: must be at least 1"},
		{cmds: "micro nccl", args: []string{"--tp", "2"}, get: func(r resolved) any { return r.gpu.opts.TP }, want: 2},
		{cmds: "micro nccl", args: []string{"--ep=false"}, get: func(r resolved) any { return r.gpu.opts.EP }, want: false},
		{cmds: "micro nccl", args: []string{"--batch", "3,5"}, get: func(r resolved) any { return r.gpu.opts.Batch }, want: []int{3, 5}},
		{cmds: "micro nccl", args: []string{"--batch", ""}, wantErr: "--batch: "},
		{cmds: "micro nccl", args: []string{"--workdir", "/w"}, get: func(r resolved) any { return r.gpuF.workDir }, want: "/w"},
		{cmds: "micro nccl", args: []string{"--workdir", ""}, wantErr: "--workdir: "},
		{cmds: "micro nccl", args: []string{"--force"}, get: func(r resolved) any { return r.gpuF.force }, want: true},
		{cmds: "micro nccl", args: []string{"--no-embed-allreduce"}, get: func(r resolved) any { return r.gpu.opts.NoEmbeddingAllReduce }, want: true},
		{cmds: "micro nccl", args: []string{"--dry-run"}, get: func(r resolved) any { return r.gpuF.dryRun }, want: true},
		{cmds: "micro", args: []string{"--python", "python3.12"}, get: func(r resolved) any { return r.micro.Python }, want: "python3.12"},
		{cmds: "micro", args: []string{"--python", ""}, wantErr: "--python: must name the Python"},
		{cmds: "micro", args: []string{"--warmup-ms", "0"}, wantErr: "--warmup-ms: must be more than 0"},
		{cmds: "micro", args: []string{"--warmup-ms", "5"}, get: func(r resolved) any { return r.micro.WarmupMs }, want: 5.0},
		{cmds: "micro", args: []string{"--rep-ms", "0"}, wantErr: "--rep-ms: must be more than 0"},
		{cmds: "micro", args: []string{"--rep-ms", "20"}, get: func(r resolved) any { return r.micro.RepMs }, want: 20.0},
		{cmds: "micro", args: []string{"--no-calib"}, get: func(r resolved) any { return r.micro.NoCalib }, want: true},
		{cmds: "nccl", args: []string{"--nproc", "0"}, get: func(r resolved) any { return r.nccl.NProc }, want: 4}, // the TP size
		{cmds: "nccl", args: []string{"--nproc", "3"}, get: func(r resolved) any { return r.nccl.NProc }, want: 3},
		{cmds: "nccl", args: []string{"--torchrun", ""}, wantErr: "--torchrun: must name torchrun"},
		{cmds: "nccl", args: []string{"--torchrun", "tr"}, get: func(r resolved) any { return r.nccl.Torchrun }, want: "tr"},
		{cmds: "nccl", args: []string{"--python", "py"}, get: func(r resolved) any { return r.nccl.Python }, want: "py"},
		{cmds: "nccl", args: []string{"--python", ""}, wantErr: "--python: must name the Python"},
		{cmds: "nccl", args: []string{"--tokens", "4,8"}, get: func(r resolved) any { return []int(r.nccl.Tokens) }, want: []int{4, 8}},
		{cmds: "nccl", args: []string{"--tokens", ""}, wantErr: "-tokens"},
		{cmds: "nccl", args: []string{"--repeats", "0"}, wantErr: "--repeats: must be at least 1"},
		{cmds: "nccl", args: []string{"--repeats", "3"}, get: func(r resolved) any { return r.nccl.Repeats }, want: 3},
		{cmds: "nccl", args: []string{"--no-graph"}, get: func(r resolved) any { return r.nccl.NoGraph }, want: true},
		// profile
		{cmds: "profile", args: []string{"--requests", "0"}, get: func(r resolved) any { return r.camp.Profile.Requests }, want: 0},
		{cmds: "profile", args: []string{"--levels", "2,4"}, get: func(r resolved) any { return r.profile.Concurrency }, want: []int{2, 4}},
		{cmds: "profile", args: []string{"--levels", ""}, wantErr: "--levels: "},
		{cmds: "profile", args: []string{"--concurrency", "3"}, get: func(r resolved) any { return r.profile.Concurrency }, want: []int{3}},
		{cmds: "profile", args: []string{"--steps", "0"}, wantErr: "--steps: want 1 to"},
		{cmds: "profile", args: []string{"--steps", "10"}, get: func(r resolved) any { return r.profile.Steps }, want: 10},
		{cmds: "profile", args: []string{"--profiler-dir", ""}, wantErr: "--profiler-dir: must name the directory"},
		{cmds: "profile", args: []string{"--profiler-dir", "/p2"}, get: func(r resolved) any { return r.profile.ProfilerDir }, want: "/p2"},
		{cmds: "profile", args: []string{"--stop-timeout", "0s"}, wantErr: "--stop-timeout: must be more than 0"},
		{cmds: "profile", args: []string{"--stop-timeout", "1m"}, get: func(r resolved) any { return r.profile.StopTimeout }, want: time.Minute},
		{cmds: "profile", args: []string{"--top", "0"}, wantErr: "--top: must be at least 1"},
		{cmds: "profile", args: []string{"--top", "3"}, get: func(r resolved) any { return r.profile.Top }, want: 3},
		{cmds: "profile", args: []string{"--steady"}, get: func(r resolved) any { return r.profile.Steady }, want: true},
		{cmds: "profile", args: []string{"--steady=false"}, get: func(r resolved) any { return r.profile.Steady }, want: false},
		// tail
		{cmds: "tail", args: []string{"--identity", ""}, get: func(r resolved) any { return r.camp.HostOptions().Identity }, want: ""},
		{cmds: "tail", args: []string{"--known-hosts", "/kh2"}, get: func(r resolved) any { return r.camp.HostOptions().KnownHosts }, want: "/kh2"},
		{cmds: "tail", args: []string{"--ssh-config", ""}, get: func(r resolved) any { return r.camp.HostOptions().SSHConfig }, want: ""},
		{cmds: "tail", args: []string{"--accept-new-host-key=false"}, get: func(r resolved) any { return r.camp.HostOptions().AcceptNewHostKey }, want: false},
		{cmds: "tail", args: []string{"--from-start"}, get: func(r resolved) any { return r.fromStart }, want: true},
		// run
		{cmds: "run", args: []string{"--phases", "macro"}, get: func(r resolved) any { return r.run.Phases }, want: []string{"macro"}},
		{cmds: "run", args: []string{"--phases", "gemm"}, wantErr: "--phases: "},
		{cmds: "run", args: []string{"--redo", "macro,micro"}, get: func(r resolved) any { return r.run.Redo }, want: []string{"macro", "micro"}},
		{cmds: "run", args: []string{"--skip-doctor"}, get: func(r resolved) any { return r.run.SkipDoctor }, want: true},
		{cmds: "run", args: []string{"--skip-doctor=false"}, get: func(r resolved) any { return r.run.SkipDoctor }, want: false},
		{cmds: "run", args: []string{"--stop-pid", "4242"}, get: func(r resolved) any { return r.run.StopPID }, want: 4242},
		{cmds: "run", args: []string{"--keep"}, get: func(r resolved) any { return r.run.Keep }, want: true},
		{cmds: "run", args: []string{"--keep=false"}, get: func(r resolved) any { return r.run.Keep }, want: false},
		// capacity (the campaign has no capacity section: a traffic is given)
		{cmds: "capacity", args: []string{"--json", filepath.Join(dir, "cap.json"), "--rate", "1"}, get: func(r resolved) any { return r.cmd.JSONPath }, want: filepath.Join(dir, "cap.json")},
		{cmds: "capacity", args: []string{"--rate", "5"}, get: func(r resolved) any { return r.capacity.Rate }, want: 5.0},
		{cmds: "capacity", args: []string{"--rate", "0"}, wantErr: "no traffic"},
		{cmds: "capacity", args: []string{"--users", "20", "--think-time", "0s"}, get: func(r resolved) any { return [2]any{r.capacity.Users, r.capacity.Think} }, want: [2]any{20, time.Duration(0)}},
		{cmds: "capacity", args: []string{"--users", "-1"}, wantErr: "--users: "},
		{cmds: "capacity", args: []string{"--think-time", "30s", "--users", "5"}, get: func(r resolved) any { return r.capacity.Think }, want: 30 * time.Second},
		{cmds: "capacity", args: []string{"--slo", "", "--rate", "1"}, get: func(r resolved) any { return r.capacity.SLO }, want: ""},
		{cmds: "capacity", args: []string{"--slo", "tpot=nope", "--rate", "1"}, wantErr: "--slo: "},
		{cmds: "capacity", args: []string{"--headroom", "0", "--rate", "1"}, get: func(r resolved) any { return r.capacity.Headroom }, want: 0.0},
		{cmds: "capacity", args: []string{"--headroom", "1", "--rate", "1"}, wantErr: "--headroom: "},
		{cmds: "capacity", args: []string{"--tp", "2", "--rate", "1"}, get: func(r resolved) any { return r.capacity.TP }, want: 2},
		{cmds: "capacity", args: []string{"--pp", "0", "--rate", "1"}, get: func(r resolved) any { return r.capacity.PP }, want: 0},
		{cmds: "capacity", args: []string{"--nodes", "-1", "--rate", "1"}, wantErr: "--tp, --pp and --nodes must not be negative"},
		{cmds: "capacity", args: []string{"--trace", "trace.jsonl"}, get: func(r resolved) any { return r.capacity.Rate }, want: 1.5},
		{cmds: "capacity", args: []string{"--trace", "trace.jsonl", "--rate", "2"}, wantErr: "--trace: give a trace or --rate/--users, not both"},
		{cmds: "capacity", args: []string{"--trace", "prompts.jsonl"}, wantErr: "--trace prompts.jsonl:1: timestamp and input_length are required"},
		// loadgen manifest (its resolve gives --url, --agents 3, --image and --coordinator first)
		{cmds: "loadgen-manifest", args: []string{"--url", "http://10.1.2.3:9000/v1"}, get: func(r resolved) any { return r.manifest.Spec.URL }, want: "http://10.1.2.3:9000/v1"},
		{cmds: "loadgen-manifest", args: []string{"--url", ""}, wantErr: "--url: must be set"},
		{cmds: "loadgen-manifest", args: []string{"--url", "http://localhost:8000"}, wantErr: "--url http://localhost:8000: a loopback address"},
		{cmds: "loadgen-manifest", args: []string{"--agents", "8"}, get: func(r resolved) any { return r.manifest.Agents }, want: 8},
		{cmds: "loadgen-manifest", args: []string{"--agents", "0"}, wantErr: "--agents: want 1 to 1000, got 0"},
		{cmds: "loadgen-manifest", args: []string{"--image", "ghcr.io/o/profdeck@sha256:ab"}, get: func(r resolved) any { return r.manifest.Image }, want: "ghcr.io/o/profdeck@sha256:ab"},
		{cmds: "loadgen-manifest", args: []string{"--image", ""}, wantErr: "--image: want the image"},
		{cmds: "loadgen-manifest", args: []string{"--coordinator", "coord.bench.svc:7070"}, get: func(r resolved) any { return r.manifest.Coordinator }, want: "coord.bench.svc:7070"},
		{cmds: "loadgen-manifest", args: []string{"--coordinator", ""}, wantErr: "--coordinator: want HOST:PORT"},
		{cmds: "loadgen-manifest", args: []string{"--name", "s2"}, get: func(r resolved) any { return r.manifest.Name }, want: "s2"},
		{cmds: "loadgen-manifest", args: []string{"--name", ""}, wantErr: "--name: want lower-case"},
		{cmds: "loadgen-manifest", args: []string{"--namespace", ""}, get: func(r resolved) any { return r.manifest.Namespace }, want: ""},
		{cmds: "loadgen-manifest", args: []string{"--namespace", "Bench"}, wantErr: "--namespace: want lower-case"},
		{cmds: "loadgen-manifest", args: []string{"--cpu", "500m"}, get: func(r resolved) any { return r.manifest.CPU }, want: "500m"},
		{cmds: "loadgen-manifest", args: []string{"--cpu", "0"}, wantErr: "--cpu: want more than 0"},
		{cmds: "loadgen-manifest", args: []string{"--memory", "1G"}, get: func(r resolved) any { return r.manifest.Memory }, want: "1G"},
		{cmds: "loadgen-manifest", args: []string{"--memory", ""}, wantErr: "--memory: want a Kubernetes quantity"},
		{cmds: "loadgen-manifest", args: []string{"--api-key-secret", "vllm/key"}, get: func(r resolved) any {
			return [3]string{r.manifest.APIKeySecret, r.manifest.APIKeySecretKey, r.manifest.APIKeyEnv}
		}, want: [3]string{"vllm", "key", "OPENAI_API_KEY"}},
		{cmds: "loadgen-manifest", args: []string{"--api-key-secret", ""}, wantErr: "--api-key-secret: want NAME/KEY"},
		{cmds: "loadgen-manifest", args: []string{"--api-key-secret", "vllm"}, wantErr: "--api-key-secret: want NAME/KEY, KEY"},
		{cmds: "loadgen-manifest", args: []string{"--deadline", "30m"}, get: func(r resolved) any { return r.manifest.Deadline }, want: 30 * time.Minute},
		{cmds: "loadgen-manifest", args: []string{"--deadline", "0s"}, wantErr: "--deadline: want 1s to 168h0m0s, got 0s"},
		// the long commands
		{cmds: "sweep run micro nccl profile", args: []string{"--progress-every", "2s"}, get: func(r resolved) any { return r.cmd.progressEvery }, want: 2 * time.Second},
		{cmds: "sweep run micro nccl profile", args: []string{"--progress-every", "0s"}, wantErr: "--progress-every: must be more than 0"},
	}
}

// TestEveryFlagWins: for every flag of every headless command, the value
// given wins over the campaign file and the defaults, whatever it is, or
// is refused as bad input naming the flag. A flag without a row fails the
// test, so a new flag comes with its row.
func TestEveryFlagWins(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(`{"prompt": "a b c", "output_len": 4}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions.jsonl"), []byte(`{"session_id": 1, "prompt": "a b c"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// 3 requests over 2 s: 1.5 req/s
	trace := "{\"timestamp\": 0, \"input_length\": 9}\n{\"timestamp\": 1500, \"input_length\": 9}\n{\"timestamp\": 1000, \"input_length\": 9}\n{\"timestamp\": 2000, \"input_length\": 9}\n"
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	plain, withSim := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "sim.yaml")
	for p, text := range map[string]string{plain: flagsCampaign, withSim: flagsCampaign + flagsSim} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	covered := map[string]map[string]bool{}
	for _, row := range flagRows(dir) {
		for _, name := range strings.Fields(row.cmds) {
			if covered[name] == nil {
				covered[name] = map[string]bool{"c": true} // every row gives -c
			}
			covered[name][strings.TrimLeft(strings.SplitN(row.args[0], "=", 2)[0], "-")] = true
			if len(row.args) > 2 && strings.HasPrefix(row.args[2], "-") {
				covered[name][strings.TrimLeft(row.args[2], "-")] = true
			}
			cmd := flagCommands[name]
			camp := plain
			if row.sim {
				camp = withSim
			}
			t.Run(name+" "+strings.Join(row.args, " "), func(t *testing.T) {
				r, err := cmd.resolve(append([]string{"-c", camp}, row.args...))
				if r.cmd != nil {
					defer r.cmd.Close()
				}
				if row.wantErr != "" {
					var bad *BadInputError
					if err == nil || !errors.As(err, &bad) && !strings.Contains(err.Error(), "invalid value") || !strings.Contains(err.Error(), row.wantErr) {
						t.Fatalf("err %v, want bad input with %q", err, row.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := row.get(r); !reflect.DeepEqual(got, row.want) {
					t.Errorf("got %#v, want %#v", got, row.want)
				}
			})
		}
	}
	for _, name := range sortedKeys(flagCommands) {
		flagCommands[name].flags().VisitAll(func(f *flag.Flag) {
			if !covered[name][f.Name] {
				t.Errorf("%s --%s: no row shows that it wins", name, f.Name)
			}
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
