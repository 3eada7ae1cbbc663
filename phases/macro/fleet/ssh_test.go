package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
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
func dial(t testing.TB, opt sshtest.Options) *ssh.Host { return dialServer(t, sshtest.Start(t, opt)) }

// dialServer dials srv with its keys only.
func dialServer(t testing.TB, srv *sshtest.Server) *ssh.Host {
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

// perRequest is one value of a record, in µs.
func perRequest(f func(macro.Record) float64) func(macro.Record) []int64 {
	return func(r macro.Record) []int64 { return []int64{int64(f(r)*1e3 + 0.5)} }
}

func each(f func(macro.Record) []float64) func(macro.Record) []int64 {
	return func(r macro.Record) []int64 {
		var out []int64
		for _, v := range f(r) {
			out = append(out, int64(v*1e3+0.5))
		}
		return out
	}
}

// checked are the percentiles a level reports, each with its values in
// the records (ITL's from their gaps, Config.Gaps).
var checked = []struct {
	name string
	qs   []float64
	got  func(*phases.LevelResult) []float64
	vals func(macro.Record) []int64
}{
	{"ttft", three, func(l *phases.LevelResult) []float64 { return []float64{l.MedianTTFTms, l.P90TTFTms, l.P99TTFTms} }, perRequest(func(r macro.Record) float64 { return r.TTFTms })},
	{"tpot", three, func(l *phases.LevelResult) []float64 { return []float64{l.MedianTPOTms, l.P90TPOTms, l.P99TPOTms} }, perRequest(func(r macro.Record) float64 { return r.TPOTms })},
	{"itl", three, func(l *phases.LevelResult) []float64 { return []float64{l.MedianITLms, l.P90ITLms, l.P99ITLms} }, each(func(r macro.Record) []float64 { return r.ITLms })},
	{"itl_chunk", three, func(l *phases.LevelResult) []float64 {
		return []float64{l.MedianITLChunkms, l.P90ITLChunkms, l.P99ITLChunkms}
	}, each(func(r macro.Record) []float64 { return r.ChunkGapsms })},
	{"e2el", three, func(l *phases.LevelResult) []float64 { return []float64{l.MedianE2ELms, l.P90E2ELms, l.P99E2ELms} }, perRequest(func(r macro.Record) float64 { return r.E2ELms })},
	{"ttfb", []float64{0.5}, func(l *phases.LevelResult) []float64 { return []float64{l.MedianTTFBms} }, perRequest(func(r macro.Record) float64 { return r.TTFBms })},
	{"ttfat", []float64{0.5}, func(l *phases.LevelResult) []float64 { return []float64{l.MedianTTFATms} }, perRequest(func(r macro.Record) float64 { return r.TTFATms })},
	{"send_lag", []float64{0.5, 0.99}, func(l *phases.LevelResult) []float64 { return []float64{l.MedianSendLagms, l.P99SendLagms} }, perRequest(func(r macro.Record) float64 { return r.SendLagMs })},
}

// worstError checks every percentile the level reports against the exact
// one of the records' values (within 1%, or 2 µs for values the clock
// barely tells apart), and returns each metric's largest relative error.
func worstError(t *testing.T, n int, lr *phases.LevelResult, recs []macro.Record) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, c := range checked {
		var xs []int64
		for _, r := range recs {
			xs = append(xs, c.vals(r)...)
		}
		if len(xs) == 0 {
			t.Fatalf("%d agents: no %s in the records", n, c.name)
		}
		for k, got := range c.got(lr) {
			want := exact(xs, c.qs[k])
			if d := math.Abs(got - want); d > 0.01*want && d > 0.002 {
				t.Errorf("%d agents: %s p%.0f merged %.3f ms, all records %.3f ms", n, c.name, 100*c.qs[k], got, want)
			} else if want > 0 {
				out[c.name] = max(out[c.name], d/want)
			}
		}
	}
	return out
}

// Two and four agents, each its own sshd, run one closed-loop level against
// one server: every percentile the level reports is that of all the
// requests' raw records within 1%, every request is counted, and no agent
// is left.
func TestAgentsOverSSHMergeExactly(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	for _, n := range []int{2, 4} {
		ms, caches := members(t, n)
		var buf bytes.Buffer
		cfg := levelConfig(url, 60)
		cfg.JSONL, cfg.Gaps = &buf, true
		lv, err := RunClosed(context.Background(), cfg, 8, ms)
		if err != nil {
			t.Fatal(err)
		}
		recs := finished(t, &buf)
		if lv.Partial || lv.OK != 60 || len(recs) != 60 {
			t.Fatalf("%d agents: ok %d, %d records, note %q", n, lv.OK, len(recs), lv.Note())
		}
		lr := lv.LevelResult(8, 0)
		if w := mergeWarnings(lr.Warnings); len(w) > 0 || !slices.Contains(lr.Notes, fmt.Sprintf("%d load agents: percentiles merged from all requests' histograms", n)) {
			t.Errorf("%d agents: warnings %q, notes %q", n, w, lr.Notes)
		}
		worst := worstError(t, n, &lr, recs)
		for _, c := range caches {
			noAgentLeft(t, c)
		}
		// Without a record writer only histograms and counts come back.
		cfg = levelConfig(url, 40)
		cfg.JSONL = nil
		lv2, err := RunClosed(context.Background(), cfg, 8, ms)
		if err != nil || lv2.OK != 40 || lv2.Metrics["e2el"].Count != 40 || lv2.Metrics["itl"].Count < 40 {
			t.Fatalf("%d agents, histograms only: ok %d, e2el count %d, itl count %d, err %v", n, lv2.OK, lv2.Metrics["e2el"].Count, lv2.Metrics["itl"].Count, err)
		}
		t.Logf("%d agents, %d requests: largest error of the merged percentiles against all records, by metric: %s", n, lv.OK, errorsText(worst))
	}
}

// mergeWarnings are the warnings a merged level should not have: all of
// them but an agent's own that it fell behind its streams (a loaded
// machine reads them bunched; the warning is then true).
func mergeWarnings(ws []string) []string {
	var out []string
	for _, w := range ws {
		if !strings.Contains(w, "this client fell behind") {
			out = append(out, w)
		}
	}
	return out
}

func errorsText(m map[string]float64) string {
	var parts []string
	for _, c := range checked {
		parts = append(parts, fmt.Sprintf("%s %.3f%%", c.name, 100*m[c.name]))
	}
	return strings.Join(parts, ", ")
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
