package macropane

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/ui/common"
)

// harness drives the pane like the root does, against a real emulator
// over loopback: commands run in goroutines, session events come back in
// 250 ms batches, and every message goes through Update.
type harness struct {
	t      *testing.T
	m      *Model
	msgs   chan tea.Msg
	status []common.StatusMsg
	events []phases.Event
}

func newHarness(t *testing.T, conc []int, requests, outputLen int) *harness {
	t.Helper()
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", CoarseTiming: true})
	srv := httptest.NewServer(emu)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); emu.Close() })
	d := testDeps(t, false)
	d.Now = time.Now
	d.Campaign.Server.URL = srv.URL
	d.Campaign.Macro.Concurrency = conc
	d.Campaign.Macro.Requests = requests
	d.Campaign.Macro.Warmup = 0
	d.Campaign.Macro.InputLen = 16
	d.Campaign.Macro.OutputLen = outputLen
	m := New(d)
	m.SetSize(100, 30)
	return &harness{t: t, m: m, msgs: make(chan tea.Msg, 64)}
}

// do runs cmd the way the program would, its messages arriving on h.msgs.
func (h *harness) do(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				h.do(c)
			}
			return
		}
		if msg != nil {
			h.msgs <- msg
		}
	}()
}

func (h *harness) update(msg tea.Msg) {
	_, cmd := h.m.Update(msg)
	h.do(cmd)
}

func (h *harness) press(k string) { h.update(press(k)) }

// pump feeds the pane until stop returns true or the deadline passes,
// then half a second more so that what is in flight lands.
func (h *harness) pump(d time.Duration, stop func() bool) {
	h.t.Helper()
	deadline := time.After(d)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var batch []phases.Event
	var settle <-chan time.Time
	for {
		if settle == nil && stop() {
			settle = time.After(500 * time.Millisecond)
		}
		select {
		case ev := <-h.m.d.Session.Updates():
			h.events = append(h.events, ev)
			if common.PhaseOf(ev) == phases.Macro {
				batch = append(batch, ev)
			}
		case <-tick.C:
			h.update(common.EventsMsg{At: time.Now(), Events: batch})
			batch = nil
		case msg := <-h.msgs:
			if st, ok := msg.(common.StatusMsg); ok {
				h.status = append(h.status, st)
				continue
			}
			// Events before the end reach the pane first, as the root's
			// batches would.
			h.update(common.EventsMsg{At: time.Now(), Events: batch})
			batch = nil
			h.update(msg)
		case <-settle:
			h.update(common.EventsMsg{At: time.Now(), Events: batch})
			return
		case <-deadline:
			h.t.Fatalf("timed out; view:\n%s", plain(h.m))
		}
	}
}

func (h *harness) lastStatus() string {
	if len(h.status) == 0 {
		return ""
	}
	return h.status[len(h.status)-1].Text
}

func TestLiveSweepFromKeys(t *testing.T) {
	h := newHarness(t, []int{1, 2}, 4, 16)
	h.press("s")
	if !h.m.Busy() {
		t.Fatal("s starts a sweep")
	}
	h.pump(30*time.Second, func() bool { return !h.m.Busy() })
	if len(h.m.levels) != 2 {
		t.Fatalf("levels %d; status %v; view:\n%s", len(h.m.levels), h.status, plain(h.m))
	}
	for _, lv := range h.m.levels {
		if lv.Completed != 4 || lv.Server == nil || !lv.Server.Available {
			t.Fatalf("level %+v server %+v", lv, lv.Server)
		}
	}
	if !strings.Contains(h.lastStatus(), "macro sweep done: 2 levels") {
		t.Fatalf("status %v", h.status)
	}
	// The journal has the phase's bracket and both levels.
	var started, finished, levels int
	for _, ev := range h.m.d.Session.Events() {
		switch ev.Kind {
		case phases.KindSessionPhaseStarted:
			started++
		case phases.KindSessionPhaseFinished:
			finished++
			if e := ev.Data.(phases.PhaseFinished).Err; e != "" {
				t.Fatalf("phase finished with %q", e)
			}
		case phases.KindMacroLevel:
			levels++
		}
	}
	if started != 1 || finished != 1 || levels != 2 {
		t.Fatalf("journal: started %d finished %d levels %d", started, finished, levels)
	}
	if v := plain(h.m); !strings.Contains(v, "finished") || !strings.Contains(v, "server running 0") {
		t.Fatalf("view after the sweep:\n%s", v)
	}
}

func TestLiveSteerPauseStop(t *testing.T) {
	h := newHarness(t, []int{2, 4, 8}, 400, 64)
	h.press("s")
	h.pump(30*time.Second, func() bool { return h.m.sweep != nil && h.m.sweep.Concurrency() == 2 })
	h.press("+")
	if c := h.m.sweep.Concurrency(); c != 4 {
		t.Fatalf("+ doubles: concurrency %d", c)
	}
	h.press("-")
	h.press("-")
	if c := h.m.sweep.Concurrency(); c != 1 {
		t.Fatalf("- halves: concurrency %d", c)
	}
	h.press("p")
	if !h.m.sweep.Paused() {
		t.Fatal("p pauses")
	}
	h.pump(30*time.Second, func() bool { return h.m.cur != nil && h.m.cur.Tick.Paused })
	if v := plain(h.m); !strings.Contains(v, "PAUSED") {
		t.Fatalf("a paused sweep says so:\n%s", v)
	}
	h.press("p")
	if h.m.sweep.Paused() {
		t.Fatal("p resumes")
	}
	h.press("s")
	if !h.m.stopping || !h.m.Busy() {
		t.Fatalf("s asks to stop: state %v", h.m.r.State)
	}
	h.press("s")
	if h.m.r.State != common.RunCancelling {
		t.Fatalf("s twice cuts short: state %v", h.m.r.State)
	}
	h.pump(30*time.Second, func() bool { return !h.m.Busy() })
	if len(h.m.levels) > 1 {
		t.Fatalf("the sweep went on after the stop: %d levels", len(h.m.levels))
	}
	for _, st := range h.status {
		if st.Error {
			t.Fatalf("a stop is not an error: %v", h.status)
		}
	}
}

func TestLiveServerDown(t *testing.T) {
	h := newHarness(t, []int{1}, 2, 8)
	h.m.d.Campaign.Server.URL = "http://127.0.0.1:1" // nothing listens there
	h.press("s")
	h.pump(30*time.Second, func() bool { return !h.m.Busy() })
	var errs []string
	for _, st := range h.status {
		if st.Error {
			errs = append(errs, st.Text)
		}
	}
	t.Logf("error shown: %s", errs)
	if len(errs) != 1 || !strings.Contains(errs[0], "macro sweep") || !strings.Contains(errs[0], "127.0.0.1:1") {
		t.Fatalf("want one clear error, got %v", h.status)
	}
	if v := plain(h.m); !strings.Contains(v, "sweep failed") {
		t.Fatalf("the failure shows in the pane:\n%s", v)
	}
}

// A sweep through the simulated deployment: the server listens on the
// "host's" localhost and is reachable only through the host's
// DialContext, for the requests and for /metrics alike.
func TestLiveThroughSimulatedHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	dep, err := sim.Start(ctx, sim.Options{AutoStart: true, LoadTime: 300 * time.Millisecond,
		Emulator: vllmemu.Config{CoarseTiming: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Close()
	client := &http.Client{Transport: &http.Transport{DialContext: dep.DialContext}, Timeout: 2 * time.Second}
	for {
		resp, err := client.Get("http://127.0.0.1:8000/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("simulated server never became ready: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	h := newHarness(t, []int{1, 2}, 3, 8)
	h.m.d.Host = dep
	h.m.d.Campaign.Server.URL = "http://127.0.0.1:8000"
	h.press("s")
	h.pump(30*time.Second, func() bool { return !h.m.Busy() })
	if len(h.m.levels) != 2 {
		t.Fatalf("levels %d; status %v", len(h.m.levels), h.status)
	}
	if sl := h.m.levels[0].Server; sl == nil || !sl.Available {
		t.Fatalf("server metrics through the host: %+v", sl)
	}
	if v := plain(h.m); !strings.Contains(v, "SIMULATED") {
		t.Fatalf("the simulated deployment is labelled:\n%s", v)
	}
}

// The demo asks the pane to start its sweep at once.
func TestAutoStart(t *testing.T) {
	h := newHarness(t, []int{1}, 2, 8)
	if h.m.Init() != nil || h.m.Busy() {
		t.Fatal("without AutoStart, Init starts nothing")
	}
	h.m.d.AutoStart = map[string]bool{phases.Macro: true}
	h.do(h.m.Init())
	if !h.m.Busy() {
		t.Fatal("AutoStart starts the sweep from Init")
	}
	h.pump(30*time.Second, func() bool { return !h.m.Busy() })
	if len(h.m.levels) != 1 {
		t.Fatalf("levels %d; status %v", len(h.m.levels), h.status)
	}
}
