package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// profdeckBinary builds the agent copied to the hosts, once per test run.
func profdeckBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "profdeck-fleet-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "profdeck")
		if out, err := exec.Command("go", "build", "-o", built, "github.com/profdeck/profdeck").CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build profdeck: %v", buildErr)
	}
	return built
}

// members dials n sshds, one per agent, each its own port and host alias.
func members(t testing.TB, n int) ([]Member, []string) {
	exe := profdeckBinary(t)
	var ms []Member
	var caches []string
	for i := range n {
		cache := t.TempDir()
		h := dial(t, sshtest.Options{Env: []string{"XDG_CACHE_HOME=" + cache}})
		ms = append(ms, Member{Name: "gen" + string(rune('1'+i)), Opt: onhost.Options{Host: h, Exe: exe}})
		caches = append(caches, cache)
	}
	return ms, caches
}

// dial starts an sshd of its own and dials it with its keys only.
func dial(t testing.TB, opt sshtest.Options) *ssh.Host {
	srv := sshtest.Start(t, opt)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := ssh.Dial(context.Background(), srv.Target(), ssh.Options{Identity: srv.ClientKey, KnownHosts: srv.KnownHosts, SSHConfig: cfg,
		ConnectTimeout: 3 * time.Second, HandshakeTimeout: 5 * time.Second, KillGrace: time.Second})
	if err != nil {
		t.Fatalf("dial: %v\nsshd log:\n%s", err, srv.Log())
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func levelConfig(url string, requests int) macro.Config {
	return macro.Config{URL: url, API: macro.APICompletions, Requests: requests, Warmup: 1, InputLen: 16, OutputLen: 16,
		Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent, Seed: 7,
		Log: func(string) {}, JSONL: io.Discard}
}

// finished reads the finished requests' records the agents wrote to buf
// (warm-up and failed ones left out): the test's reference.
func finished(t *testing.T, buf *bytes.Buffer) []macro.Record {
	t.Helper()
	var out []macro.Record
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var r macro.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a record: %v: %q", err, line)
		}
		if !r.Warmup && r.Failure == "" {
			out = append(out, r)
		}
	}
	return out
}

// exactMs is the q-quantile of the records' metric by nearest rank.
func exactMs(recs []macro.Record, q float64, f func(macro.Record) float64) float64 {
	var xs []int64
	for _, r := range recs {
		xs = append(xs, int64(f(r)*1e3+0.5))
	}
	return exact(xs, q)
}

// Two and four agents, each its own sshd, run one closed-loop level against
// one server: the merged percentiles are those of all the requests' raw
// records within 1%, every request is counted, and no agent is left.
func TestAgentsOverSSHMergeExactly(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	for _, n := range []int{2, 4} {
		ms, caches := members(t, n)
		var buf bytes.Buffer
		cfg := levelConfig(url, 60)
		cfg.JSONL = &buf
		lv, err := RunClosed(context.Background(), cfg, 8, ms)
		if err != nil {
			t.Fatal(err)
		}
		recs := finished(t, &buf)
		if lv.Partial || lv.OK != 60 || len(recs) != 60 {
			t.Fatalf("%d agents: ok %d, %d records, note %q", n, lv.OK, len(recs), lv.Note())
		}
		worst := 0.0
		for _, c := range []struct {
			metric string
			f      func(macro.Record) float64
		}{{"ttft", func(r macro.Record) float64 { return r.TTFTms }}, {"e2el", func(r macro.Record) float64 { return r.E2ELms }}} {
			q := lv.Metrics[c.metric]
			for _, p := range []struct{ q, got float64 }{{0.5, q.P50}, {0.9, q.P90}, {0.99, q.P99}} {
				want := exactMs(recs, p.q, c.f)
				worst = max(worst, math.Abs(p.got-want)/want)
				if math.Abs(p.got-want) > 0.01*want {
					t.Errorf("%d agents: %s p%.0f merged %.3f ms, all records %.3f ms", n, c.metric, 100*p.q, p.got, want)
				}
			}
		}
		for _, c := range caches {
			noAgentLeft(t, c)
		}
		// Without a record writer only histograms and counts come back.
		cfg = levelConfig(url, 40)
		cfg.JSONL = nil
		lv2, err := RunClosed(context.Background(), cfg, 8, ms)
		if err != nil || lv2.OK != 40 || lv2.Metrics["e2el"].Count != 40 {
			t.Fatalf("%d agents, histograms only: ok %d, e2el count %d, err %v", n, lv2.OK, lv2.Metrics["e2el"].Count, err)
		}
		t.Logf("%d agents: ttft p50 %.2f p99 %.2f ms over %d requests; merged p50/p90/p99 of TTFT and E2EL within %.3f%% of all records", n,
			lv.Metrics["ttft"].P50, lv.Metrics["ttft"].P99, lv.OK, 100*worst)
	}
}

// noAgentLeft fails when a program copied under cache still runs.
func noAgentLeft(t *testing.T, cache string) {
	t.Helper()
	sshtest.WaitFor(t, 5*time.Second, "no agent left under "+cache, func() bool { return len(running(cache)) == 0 })
}

// running lists the processes whose program lies under dir.
func running(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(exe, dir+"/") {
			out = append(out, e.Name())
		}
	}
	return out
}
