package campaign

import (
	"reflect"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
)

// The campaign's sections reach each engine's configuration, and what the
// file leaves out takes the defaults.
func TestEngineConfigs(t *testing.T) {
	c, err := Parse([]byte(`host: gpu1
ssh:
  identity: ~/.ssh/k
  known_hosts: /kh
server:
  url: http://127.0.0.1:8000/v1
  api_key_env: MY_KEY
  launch: vllm serve m
  log: /logs/s.log
  container: vllm
  profiler_dir: /prof
model:
  preset: kimi-k2.5
  tp: 4
  ep: true
  expect_gib: 70
load:
  stall_after: 90s
macro:
  api: chat
  concurrency: [1, 8]
  requests: 32
  input_len: 100
  output_len: 50
  stop_at_plateau: true
micro:
  batch: [1, 2]
  python: docker exec -i vllm python3
nccl:
  nproc: 0
  torchrun: docker exec -i vllm torchrun
`))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MY_KEY", "sekrit")
	if o := c.HostOptions(); o.Identity != "~/.ssh/k" || o.KnownHosts != "/kh" {
		t.Errorf("host options %+v", o)
	}
	if c.APIKey() != "sekrit" {
		t.Errorf("api key %q", c.APIKey())
	}
	if s := c.ServerSettings(); s.Launch != "vllm serve m" || s.Log != "/logs/s.log" || s.Container != "vllm" || s.ProfilerDir != "/prof" {
		t.Errorf("server %+v", s)
	}
	l := c.LoadConfig()
	if l.LogPath != "/logs/s.log" || l.PIDFile != "/logs/s.log.pid" || l.HealthURL != "http://127.0.0.1:8000/health" ||
		l.ExpectGiB != 70 || l.StallAfter != 90*time.Second || l.Container != "vllm" {
		t.Errorf("load %+v", l)
	}
	sw := c.SweepConfig("k")
	if sw.URL != "http://127.0.0.1:8000/v1" || sw.API != "chat" || !reflect.DeepEqual(sw.Concurrency, []int{1, 8}) ||
		sw.Requests != 32 || sw.InputLen != 100 || sw.OutputLen != 50 || !sw.StopAtPlateau || sw.APIKey != "k" {
		t.Errorf("sweep %+v", sw)
	}
	if c.MetricsURL() != "http://127.0.0.1:8000/metrics" {
		t.Errorf("metrics %s", c.MetricsURL())
	}
	if p := c.ProfileConfig("k"); p.URL != sw.URL || p.ProfilerDir != "/prof" || p.API != "chat" || p.InputLen != 100 || !reflect.DeepEqual(p.Concurrency, []int{1}) {
		t.Errorf("profile %+v", p)
	}
	if spec, err := c.ModelSpec(); err != nil || spec != "kimi-k2.5" {
		t.Errorf("model %q %v", spec, err)
	}
	if o := c.PlanOptions(c.Micro.Batch); o.TP != 4 || !o.EP || !reflect.DeepEqual(o.Batch, []int{1, 2}) {
		t.Errorf("plan %+v", o)
	}
	if m := c.MicroConfig(); m.Python != "docker exec -i vllm python3" {
		t.Errorf("micro %+v", m)
	}
	// No nproc: one rank per tensor-parallel GPU; each rank runs the
	// interpreter of the micro section's prefix.
	if n := c.NCCLConfig(); n.NProc != 4 || n.Python != "python3" || n.Torchrun != "docker exec -i vllm torchrun" {
		t.Errorf("nccl %+v", n)
	}
	d := Defaults()
	if d.TP() != 8 || d.NCCLConfig().NProc != 8 || d.LoadConfig().LogPath != "/var/log/vllm/server.log" {
		t.Errorf("defaults: tp %d nproc %d log %s", d.TP(), d.NCCLConfig().NProc, d.LoadConfig().LogPath)
	}
}

// The host options carry the sim section, so every command opens the
// simulated deployment the campaign describes (sweep used to drop it).
func TestHostOptionsCarrySim(t *testing.T) {
	c, err := Parse([]byte("host: sim\nsim:\n  load_time: 9s\n  fail: nccl\n  nodes: 2\n  profiler_flush: 250ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := c.HostOptions()
	if o.Sim.LoadTime != 9*time.Second || o.Sim.FailWith != "nccl" || o.SimNodes != 2 ||
		o.Sim.ProfilerFlush == nil || *o.Sim.ProfilerFlush != 250*time.Millisecond {
		t.Errorf("%+v", o)
	}
}

// The run's sweep reaches the server through the head host, and knows it
// (its path and the verdict's log reading need the host, not just its dial).
func TestRunConfigOnSweepThroughHost(t *testing.T) {
	h := local.New()
	c := Defaults()
	c.Model.Preset = "kimi-k2.5"
	cfg, err := c.CampaignRunConfigOn([]remote.Host{h}, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sweep.Host != h || cfg.Sweep.Dial == nil {
		t.Errorf("sweep host %v, dial set %v; want the head host and its dial", cfg.Sweep.Host, cfg.Sweep.Dial != nil)
	}
}

// The simulated deployment follows the campaign's TP: its GPUs per node
// and the TP its step model is planned at.
func TestSimFollowsTP(t *testing.T) {
	for _, c := range []struct {
		yaml     string
		gpus, tp int
		preset   string
	}{
		{"host: sim\nmodel:\n  preset: kimi-k2.5\n  tp: 1\n", 1, 1, "kimi-k2.5"},
		{"host: sim\nmodel:\n  preset: kimi-k2.5\n  tp: 4\n", 4, 4, "kimi-k2.5"},
		{"host: sim\nmodel:\n  preset: kimi-k2.5\n  tp: 16\nsim:\n  nodes: 2\n", 8, 16, "kimi-k2.5"},
	} {
		camp, err := Parse([]byte(c.yaml))
		if err != nil {
			t.Fatal(err)
		}
		o := camp.SimOptions()
		if o.GPUs != c.gpus || o.TP != c.tp || o.Preset != c.preset {
			t.Errorf("%q: GPUs %d TP %d preset %q, want %d %d %q", c.yaml, o.GPUs, o.TP, o.Preset, c.gpus, c.tp, c.preset)
		}
	}
}

// The steps measured at the sweep's levels carry its workload, and every
// step the deployment's expert parallelism: a change of either makes them
// out of date.
func TestStepParamsCarryTheSweepsWorkload(t *testing.T) {
	c := Defaults()
	c.Macro.InputLen, c.Model.EP = 1024, true
	p := c.StepParams()
	for _, s := range []string{campaignrun.Micro, campaignrun.NCCL, campaignrun.Profile} {
		if p[s]["sweep.input_len"] != "1024" || p[s]["model.ep"] != "true" {
			t.Errorf("%s: %v", s, p[s])
		}
	}
	if _, ok := p[campaignrun.Macro]["sweep.input_len"]; ok || p[campaignrun.Macro]["macro.input_len"] != "1024" {
		t.Errorf("macro: %v", p[campaignrun.Macro])
	}
}
