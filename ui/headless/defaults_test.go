package headless

import (
	"reflect"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/local"
)

// The engines hold no defaults: a command given no flag but the server
// hands its engine a complete configuration, with the values the engines
// used to fill in themselves (written here as numbers, so that a default
// that changes fails this test).
func TestNoFlagsGiveTheSameDefaults(t *testing.T) {
	t.Chdir(t.TempDir()) // no profdeck.yaml
	r, err := flagCommands["sweep"].resolve([]string{"--url", "http://127.0.0.1:8000"})
	if err != nil {
		t.Fatal(err)
	}
	s := r.sweep
	if err := s.Validate(); err != nil {
		t.Fatalf("sweep with no flags: %v", err)
	}
	got := []any{s.API, s.Concurrency, s.Requests, s.Duration, s.Warmup, s.InputLen, s.OutputLen, s.Timeout,
		s.ClientBoundLag, s.Repeat, s.Arrivals, s.Burstiness, s.LatencyFrom, s.SearchTolerance, s.SearchFrom, s.Rate, s.Search}
	want := []any{macro.APICompletions, []int{1, 2, 4, 8, 16, 32, 64, 128, 256}, 64, time.Duration(0), 4, 256, 256, 10 * time.Minute,
		10 * time.Millisecond, 1, macro.ArrivalsPoisson, 1.0, macro.LatencySent, 0.05, 1.0, 0.0, ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sweep with no flags:\n got %v\nwant %v", got, want)
	}
	// The capture: C=1, the sweep's lengths, 50 steps, 15 kernels, half an
	// hour for stop_profile, traces over 32 MiB summarised on the host.
	r, err = flagCommands["profile"].resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := r.profile
	p.Host = local.New()
	if err := p.Validate(); err != nil {
		t.Fatalf("profile with no flags: %v", err)
	}
	got = []any{p.API, p.Concurrency, p.Steps, p.InputLen, p.OutputLen, p.StopTimeout, p.RemoteOver, p.Python, p.Top, p.ProfilerDir}
	want = []any{"completions", []int{1}, 50, 256, 256, 30 * time.Minute, int64(32 << 20), "python3", 15, "/tmp/vllm_profile-{uid}"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("profile with no flags:\n got %v\nwant %v", got, want)
	}
	// The load watcher: the log vLLM's packages write, a stall after five
	// minutes, a poll a second, a journalled snapshot every 10 s, a
	// diagnosis over 2 s.
	r, err = flagCommands["load"].resolve([]string{"--host", "local"})
	if err != nil {
		t.Fatal(err)
	}
	l := r.load
	l.Host = local.New()
	if err := l.Validate(); err != nil {
		t.Fatalf("load with no flags: %v", err)
	}
	got = []any{l.LogPath, l.StallAfter, l.Poll, l.SnapshotEvery, l.DiagnoseWindow, l.NoDiagnosis}
	want = []any{"/var/log/vllm/server.log", 5 * time.Minute, time.Second, 10 * time.Second, 2 * time.Second, false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("load with no flags:\n got %v\nwant %v", got, want)
	}
	if st := r.camp.ServerSettings(); st.Log != "/var/log/vllm/server.log" {
		t.Errorf("the server's log: %q", st.Log)
	}
	// A rate search starts at --rate, else at 1 req/s.
	for args, from := range map[string]float64{"": 1, "3.5": 3.5} {
		a := []string{"--url", "http://127.0.0.1:8000", "--search", "rate", "--slo", "tpot=50ms"}
		if args != "" {
			a = append(a, "--rate", args)
		}
		r, err := flagCommands["sweep"].resolve(a)
		if err != nil {
			t.Fatal(err)
		}
		if r.sweep.SearchFrom != from || r.sweep.Validate() != nil {
			t.Errorf("rate search, --rate %q: first rung %g (want %g), %v", args, r.sweep.SearchFrom, from, r.sweep.Validate())
		}
	}
}
