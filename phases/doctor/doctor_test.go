package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/doctor/doctortest"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/local"
)

// server is a vLLM-like server on loopback; delay slows /health.
func server(t *testing.T, delay time.Duration) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { time.Sleep(delay) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"data": []map[string]string{{"id": "test/model"}}})
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("vllm:num_requests_running 0\n")) })
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"count":1,"tokens":[1]}`)) })
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"version":"0.11.2"}`)) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// localConfig checks this machine with the stand-in tools first on PATH.
func localConfig(t *testing.T, tl doctortest.Tools, url string) Config {
	t.Helper()
	t.Setenv("PATH", doctortest.Write(t, tl)+":"+os.Getenv("PATH"))
	return Config{Host: local.New(), Campaign: "profdeck.yaml: every key valid", GPUs: 8, Python: "python3", Torchrun: "torchrun",
		Launch: "VLLM_LOGGING_LEVEL=INFO nohup vllm serve test/model", Sweep: macro.Config{URL: url}, MetricsURL: url + "/metrics",
		Loadgen: "here", ProfilerDir: t.TempDir(), TraceGiB: 0.001, Need: All, Timeout: 20 * time.Second}
}

func byName(res *Result) map[string]phases.DoctorCheck {
	m := map[string]phases.DoctorCheck{}
	for _, c := range res.Checks {
		m[c.Name] = c
	}
	return m
}

func runEvents(t *testing.T, cfg Config) (*Result, []phases.Event) {
	t.Helper()
	ch := make(chan phases.Event, 64)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, &phases.Emitter{Out: ch})
	if err != nil {
		t.Fatal(err)
	}
	close(ch)
	var evs []phases.Event
	for ev := range ch {
		evs = append(evs, ev)
	}
	return res, evs
}

func TestAllPassOnAHealthyHost(t *testing.T) {
	srv := server(t, 0)
	cfg := localConfig(t, doctortest.Tools{GPUs: 8, UsedMiB: 130000, Procs: 8, Torchrun: true, VLLM: true}, srv.URL)
	res, evs := runEvents(t, cfg)
	if res.Fails != 0 || res.Warns != 0 {
		t.Fatalf("fails %d warns %d:\n%+v", res.Fails, res.Warns, res.Checks)
	}
	got := byName(res)
	for name, want := range map[string]string{
		"host":     "local (this machine)",
		"campaign": "profdeck.yaml",
		"gpus":     "8× NVIDIA H200, 1016 of 1123 GiB in use, 8 process(es)",
		"python":   "torch 2.9.0+cu129, CUDA 12.9, 8 GPU(s) visible",
		"torchrun": "/torchrun",
		"engine":   "vLLM 0.11.2 (the server's /version)",
		"launch":   "/vllm",
		"server":   "health 200, models 200 [test/model], metrics 200, tokenize 200",
		"profiler": "writable",
		"path":     "direct · round trip p50",
	} {
		if !strings.Contains(got[name].Found, want) || got[name].Status != phases.CheckOK {
			t.Errorf("%s: %s %q, want %q", name, got[name].Status, got[name].Found, want)
		}
	}
	// The run is bracketed and every check is an event, in order.
	if len(evs) != len(checks)+2 || evs[0].Kind != phases.KindSessionPhaseStarted || evs[len(evs)-1].Kind != phases.KindSessionPhaseFinished {
		t.Fatalf("%d events", len(evs))
	}
	for i, c := range checks {
		if d, ok := evs[i+1].Data.(phases.DoctorCheck); !ok || d.Name != c.name {
			t.Errorf("event %d: %+v, want check %s", i+1, evs[i+1].Data, c.name)
		}
	}
}

func TestFailsSayTheFix(t *testing.T) {
	cfg := localConfig(t, doctortest.Tools{GPUs: 4, NoTorch: true}, "http://127.0.0.1:1")
	cfg.Torchrun = "no-such-torchrun-x"
	cfg.Launch = "cd /srv && no-such-vllm-x serve m"
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	cfg.ProfilerDir = notDir + "/traces"
	res, _ := runEvents(t, cfg)
	got := byName(res)
	for name, want := range map[string][2]string{
		"gpus":     {"4× NVIDIA H200", "model.tp"},
		"python":   {"has no torch", "micro.python"},
		"torchrun": {"no-such-torchrun-x is not found", "nccl.torchrun"},
		"launch":   {"no-such-vllm-x not found", "full path"},
		"profiler": {"cannot be made", "server.profiler_dir"},
	} {
		c := got[name]
		if c.Status != phases.CheckFail || !strings.Contains(c.Found, want[0]) || !strings.Contains(c.Fix, want[1]) {
			t.Errorf("%s: %s %q fix %q, want fail %q fix %q", name, c.Status, c.Found, c.Fix, want[0], want[1])
		}
	}
	// The server is down but the campaign can start it; no path is timed.
	if c := got["server"]; c.Status != phases.CheckWarn || !strings.Contains(c.Found, "not up") || !strings.Contains(c.Fix, "serve step") {
		t.Errorf("server: %+v", c)
	}
	if res.Fails != 5 || res.Failed() != "gpus, python, torchrun, launch, profiler" {
		t.Errorf("fails %d: %s", res.Fails, res.Failed())
	}
}

func TestWhatIsNotNeededOnlyWarns(t *testing.T) {
	cfg := localConfig(t, doctortest.Tools{GPUs: 8, NoCUDA: true}, "http://127.0.0.1:1")
	cfg.Need = Need{Sweep: true, Serve: true}
	cfg.Torchrun = "no-such-torchrun-x"
	cfg.Launch = "" // and nobody can start the server: that fails
	res, _ := runEvents(t, cfg)
	got := byName(res)
	if c := got["python"]; c.Status != phases.CheckWarn || !strings.Contains(c.Found, "sees no GPU") || !strings.Contains(c.Found, "not needed") {
		t.Errorf("python: %+v", c)
	}
	if c := got["torchrun"]; c.Status != phases.CheckWarn {
		t.Errorf("torchrun: %+v", c)
	}
	if c := got["server"]; c.Status != phases.CheckFail || !strings.Contains(c.Fix, "server.launch") {
		t.Errorf("server: %+v", c)
	}
	if c := got["launch"]; c.Status != phases.CheckWarn || !strings.Contains(c.Found, "no server.launch") {
		t.Errorf("launch: %+v", c)
	}
}

func TestSlowPathWarnsWithTheFix(t *testing.T) {
	srv := server(t, 3*time.Millisecond)
	cfg := localConfig(t, doctortest.Tools{GPUs: 8, Torchrun: true, VLLM: true}, srv.URL)
	res, _ := runEvents(t, cfg)
	c := byName(res)["path"]
	if c.Status != phases.CheckWarn || !strings.Contains(c.Found, "adds") || !strings.Contains(c.Fix, "--loadgen host") {
		t.Errorf("path: %+v", c)
	}
	cfg.Loadgen = "host"
	res, _ = runEvents(t, cfg)
	if c := byName(res)["path"]; c.Status != phases.CheckOK || !strings.Contains(c.Found, "on the GPU host") {
		t.Errorf("path with loadgen host: %+v", c)
	}
}

func TestBusyGPUsWithTheServerDown(t *testing.T) {
	cfg := localConfig(t, doctortest.Tools{GPUs: 8, UsedMiB: 70000, Procs: 2, Torchrun: true, VLLM: true}, "http://127.0.0.1:1")
	res, _ := runEvents(t, cfg)
	if c := byName(res)["gpus"]; c.Status != phases.CheckWarn || !strings.Contains(c.Found, "pid 4000 python3") || !strings.Contains(c.Fix, "--force") {
		t.Errorf("gpus: %+v", c)
	}
	cfg.Campaign = ""
	res, _ = runEvents(t, cfg)
	if c := byName(res)["campaign"]; c.Status != phases.CheckWarn || !strings.Contains(c.Fix, "profdeck init") {
		t.Errorf("campaign: %+v", c)
	}
}

func TestNoNvidiaSMI(t *testing.T) {
	cfg := localConfig(t, doctortest.Tools{}, "http://127.0.0.1:1")
	t.Setenv("PATH", doctortest.Write(t, doctortest.Tools{})+":/usr/bin:/bin")
	res, _ := runEvents(t, cfg)
	if c := byName(res)["gpus"]; c.Status != phases.CheckFail || c.Found != "nvidia-smi: not found" || !strings.Contains(c.Fix, "driver") {
		t.Errorf("gpus: %+v", c)
	}
}

func TestParsers(t *testing.T) {
	gs := parseGPUs("0, NVIDIA H200, 512, 143771\nnot, a, row\n1, NVIDIA H200, 0, 143771\n")
	if len(gs) != 2 || gs[0].used != 512 || gs[1].name != "NVIDIA H200" {
		t.Errorf("parseGPUs: %+v", gs)
	}
	free, err := parseDF("Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/sda1 100 50 10485760 50% /\n")
	if err != nil || free != 10 {
		t.Errorf("parseDF: %v %v", free, err)
	}
	if _, err := parseDF("df: nonsense"); err == nil {
		t.Error("parseDF took nonsense")
	}
	if p, err := parsePy("warning: x\n{\"marker\": \"profdeck-doctor\", \"python\": \"3.10.1\", \"torch\": \"2.1\"}\n"); err != nil || p.Torch != "2.1" {
		t.Errorf("parsePy: %+v %v", p, err)
	}
	if _, err := parsePy("Traceback"); err == nil {
		t.Error("parsePy took no answer")
	}
	for launch, want := range map[string]string{
		"vllm serve m --tp 8": "vllm",
		"CUDA_VISIBLE_DEVICES=0,1 nohup /opt/v/bin/vllm serve m":                            "/opt/v/bin/vllm",
		"cd /srv && source env.sh && env A=1 python3 -m vllm.entrypoints.openai.api_server": "python3",
		"docker run --gpus all vllm/vllm-openai":                                            "docker",
	} {
		if got := strings.Join(launchPrograms(launch), ","); got != want {
			t.Errorf("launchPrograms(%q) = %q, want %q", launch, got, want)
		}
	}
}

func FuzzParsers(f *testing.F) {
	f.Add("0, NVIDIA H200, 512, 143771\n")
	f.Add("Filesystem 1024-blocks Used Available Capacity Mounted on\n")
	f.Add(`{"marker": "profdeck-doctor"}`)
	f.Fuzz(func(t *testing.T, s string) {
		parseGPUs(s)
		parseDF(s)
		parsePy(s)
		launchPrograms(s)
	})
}

// A hung python (a GPU wedged in its driver) is cut off by the check's
// timeout, and by the run's context at once.
func TestHungProbeEndsWithTheContext(t *testing.T) {
	cfg := localConfig(t, doctortest.Tools{GPUs: 8}, "http://127.0.0.1:1")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "python3"), []byte("#!/bin/sh\nexec sleep 60\n"), 0o755)
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	cfg.Timeout = time.Second
	start := time.Now()
	res, err := Run(context.Background(), cfg, nil)
	if err != nil || time.Since(start) > 10*time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
	if c := byName(res)["python"]; c.Status != phases.CheckFail {
		t.Errorf("python: %+v", c)
	}
	cfg.Timeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := Run(ctx, cfg, nil); err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("cancelled run: %v after %v", err, time.Since(start))
	}
}

// A launch program that is missing matters only when the launch runs: not
// when the server already serves and no step restarts it.
func TestLaunchNotNeededWhileServing(t *testing.T) {
	srv := server(t, 0)
	cfg := localConfig(t, doctortest.Tools{GPUs: 8, Torchrun: true}, srv.URL)
	cfg.Launch = "no-such-vllm-x serve m"
	cfg.Need = Need{Serve: true, Sweep: true}
	res, _ := runEvents(t, cfg)
	if c := byName(res)["launch"]; c.Status != phases.CheckWarn || !strings.Contains(c.Found, "already serves") {
		t.Errorf("launch while serving, no restart: %+v", c)
	}
	cfg.Need.Restart = true
	res, _ = runEvents(t, cfg)
	if c := byName(res)["launch"]; c.Status != phases.CheckFail {
		t.Errorf("launch with a restart to come: %+v", c)
	}
}

// The doctor fills in no default: a configuration missing a value is bad
// input naming the field, before any check or event.
func TestDoctorRefusesMissingValues(t *testing.T) {
	full := Config{Host: local.New(), Python: "python3", Torchrun: "torchrun", TraceGiB: 10, Timeout: time.Second}
	for field, clear := range map[string]func(*Config){
		"Host":     func(c *Config) { c.Host = nil },
		"Timeout":  func(c *Config) { c.Timeout = 0 },
		"TraceGiB": func(c *Config) { c.TraceGiB = 0 },
		"Python":   func(c *Config) { c.Python = "" },
		"Torchrun": func(c *Config) { c.Torchrun = "" },
	} {
		cfg := full
		clear(&cfg)
		events := make(chan phases.Event, 8)
		_, err := Run(context.Background(), cfg, &phases.Emitter{Out: events})
		var in *phases.InputError
		if !errors.As(err, &in) || !strings.Contains(err.Error(), "doctor: "+field) || len(events) != 0 {
			t.Errorf("%s missing: %v with %d events", field, err, len(events))
		}
	}
}
