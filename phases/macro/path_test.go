package macro_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/ssh"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// pathSweep runs one small level against rc and returns the result and
// the warnings said as events.
func pathSweep(t *testing.T, rc *recorder, cfg macro.Config) (*macro.Result, []string) {
	t.Helper()
	if cfg.URL == "" {
		srv := httptest.NewServer(rc)
		t.Cleanup(srv.Close)
		cfg.URL = srv.URL
	}
	cfg.Model, cfg.Concurrency, cfg.Requests, cfg.InputLen, cfg.OutputLen, cfg.Seed = "test/model", []int{2}, 4, 8, 30, 1
	s, err := macro.NewSweep(macro.Complete(cfg))
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan phases.Event, 256)
	var said []string
	var paths int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			switch d := ev.Data.(type) {
			case phases.MacroWarning:
				said = append(said, d.Text)
			case phases.MacroPath:
				paths++
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Run(ctx, &phases.Emitter{Out: events})
	close(events)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if paths != 1 || res.Path == nil {
		t.Fatalf("%d path events, path %v; want one of each", paths, res.Path)
	}
	return res, said
}

func hasText(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// A direct sweep records its path: the round trip of GET /health before
// the first level and each level's token events per read, about one when
// the server writes each by itself; nothing to warn about.
func TestPathDirect(t *testing.T) {
	res, said := pathSweep(t, &recorder{}, macro.Config{})
	p := res.Path
	if p.Kind != phases.PathDirect || p.Probe != "GET /health" || p.Probes != 10 || p.RTTp50ms <= 0 || p.RTTp99ms < p.RTTp50ms {
		t.Errorf("path %+v", *p)
	}
	if len(p.Levels) != 1 || p.Levels[0].Concurrency != 2 || p.Levels[0].EventsPerRead < 1 || p.Levels[0].EventsPerRead > 1.2 {
		t.Errorf("levels %+v; want C=2 at about one event per read", p.Levels)
	}
	if res.Levels[0].EventsPerRead != p.Levels[0].EventsPerRead {
		t.Errorf("level %v, path %v", res.Levels[0].EventsPerRead, p.Levels[0].EventsPerRead)
	}
	if len(p.Warnings) > 0 || hasText(res.Warnings, "path") || hasText(said, "path") {
		t.Errorf("warnings %q %q %q", p.Warnings, res.Warnings, said)
	}
	if line := macro.PathLine(*p, res.Levels); !strings.HasPrefix(line, "path: direct · round trip p50 ") || !strings.Contains(line, "(GET /health ×10) · token events per read ≤ ") {
		t.Errorf("line %q", line)
	}
}

// Without /health the round trip is /v1/models'.
func TestPathWithoutHealth(t *testing.T) {
	res, _ := pathSweep(t, &recorder{noHealth: true}, macro.Config{})
	if p := res.Path; p.Probe != "GET /v1/models" || p.Probes != 10 {
		t.Errorf("path %+v", *p)
	}
}

// A round trip over 2 ms is said in the result, as it is found and in the
// path, with the fix; not when the load already runs on the host.
func TestPathSlowRoundTrip(t *testing.T) {
	res, said := pathSweep(t, &recorder{healthDelay: 4 * time.Millisecond}, macro.Config{})
	p := res.Path
	if p.RTTp50ms < 4 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "adds ") || !strings.Contains(p.Warnings[0], "--loadgen host") {
		t.Fatalf("path %+v", *p)
	}
	if !hasText(res.Warnings, p.Warnings[0]) || !hasText(said, p.Warnings[0]) {
		t.Errorf("result %q, said %q; want %q in both", res.Warnings, said, p.Warnings[0])
	}
	res, _ = pathSweep(t, &recorder{healthDelay: 4 * time.Millisecond}, macro.Config{Path: phases.PathHost})
	if p := res.Path; p.Kind != phases.PathHost || len(p.Warnings) > 0 {
		t.Errorf("on the host: %+v", *p)
	}
}

// Token events that arrive several at a time are said per level and in
// the path, naming the levels, with who held them back.
func TestPathBunched(t *testing.T) {
	res, _ := pathSweep(t, &recorder{perWrite: 3}, macro.Config{})
	lv := res.Levels[0]
	if lv.EventsPerRead < 2.5 || !hasText(lv.Warnings, "the streams arrived bunched (") {
		t.Fatalf("level: %.2f events per read, warnings %q", lv.EventsPerRead, lv.Warnings)
	}
	p := res.Path
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "C=2: the streams arrived bunched (up to ") || !strings.Contains(p.Warnings[0], "--loadgen host") {
		t.Errorf("path warnings %q", p.Warnings)
	}
	if !hasText(res.Warnings, "C=2: the streams arrived bunched") {
		t.Errorf("result warnings %q", res.Warnings)
	}
	res, _ = pathSweep(t, &recorder{perWrite: 3}, macro.Config{Path: phases.PathHost})
	if !hasText(res.Levels[0].Warnings, "on the GPU host itself") || hasText(res.Levels[0].Warnings, "--loadgen host") {
		t.Errorf("on the host: %q", res.Levels[0].Warnings)
	}
}

func TestPathBadKind(t *testing.T) {
	if _, err := macro.NewSweep(macro.Complete(macro.Config{URL: "http://127.0.0.1:1", Path: "carrier-pigeon"})); err == nil || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Errorf("err %v", err)
	}
}

// Through an SSH server that runs no command (forwarding only), the path
// says the server holds small writes, with the fix.
func TestPathSSHNoCommand(t *testing.T) {
	sshtest.Require(t)
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	sshd := sshtest.Start(t, sshtest.Options{ExtraConfig: []string{"MaxSessions 0"}})
	h := sshHost(t, sshd)
	res, said := pathSweep(t, rc, macro.Config{URL: srv.URL, Dial: h.DialContext, Host: h})
	p := res.Path
	if p.Kind != phases.PathSSH || p.Via != h.Label() || p.Nodelay != "none" || p.NodelayNote == "" {
		t.Fatalf("path %+v", *p)
	}
	if !hasText(said, "could not be made to send each write at once") || !hasText(p.Warnings, "--loadgen host") {
		t.Errorf("said %q, path warnings %q", said, p.Warnings)
	}
}

// sshHost dials srv as the sweep's --host does.
func sshHost(t testing.TB, srv *sshtest.Server) *ssh.Host {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := ssh.Dial(context.Background(), srv.Target(), ssh.Options{Identity: srv.ClientKey, KnownHosts: srv.KnownHosts, SSHConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}
