package loadpane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

func bare() *Model {
	d := &common.Deps{Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(), Now: time.Now}
	m := New(d)
	m.SetSize(78, 19)
	return m
}

func ev(kind string, data any) phases.Event { return phases.New(time.Unix(1000, 0), kind, data) }

// N/A memory reads "unknown", never 0; every key is in the help.
func TestViewUnknownMemoryAndHelp(t *testing.T) {
	m := bare()
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: []phases.Event{
		ev(phases.KindLoadState, phases.LoadState{Host: "spark", Stage: "weights", GPUs: []phases.GPULoad{{Index: 0, Known: false, Name: "NVIDIA GB10"}}}),
	}})
	v := m.View()
	if !strings.Contains(v, "GPU0") || !strings.Contains(v, "memory unknown") || strings.Contains(v, "0.0/") {
		t.Errorf("view:\n%s", v)
	}
	var keys []string
	for _, col := range m.FullHelp() {
		for _, b := range col {
			keys = append(keys, b.Help().Key)
		}
	}
	for _, k := range []string{"s", "x", "r", "l", "k/↑", "j/↓"} {
		if !strings.Contains(strings.Join(keys, " "), k) {
			t.Errorf("help lacks %s: %v", k, keys)
		}
	}
	if len(m.ShortHelp()) != 4 {
		t.Errorf("short help: %d keys", len(m.ShortHelp()))
	}
	// Without a host the keys say why they cannot act.
	if cmd := press(m, "s"); cmd == nil {
		t.Error("s without a host did nothing visible")
	} else if msg, ok := cmd().(common.StatusMsg); !ok || !msg.Error {
		t.Errorf("s without a host: %+v", msg)
	}
}

// Two hosts of 8 GPUs: at 78×19 one row per node (min/median/max), g shows
// every GPU grouped under its node; a taller screen shows them all.
func TestViewTwoHostsFits(t *testing.T) {
	m := bare()
	var evs []phases.Event
	for _, h := range []string{"gpu1", "gpu2"} {
		st := phases.LoadState{Host: h, Stage: "weights", ShardsDone: 10, ShardsTotal: 62, ShardSecPerIt: 29.1, ShardETA: 1500}
		for i := 0; i < 8; i++ {
			st.GPUs = append(st.GPUs, phases.GPULoad{Index: i, Known: true, UsedGiB: 62.1 - float64(i)/10, ExpectedGiB: 74.9, TotalGiB: 140.4, RateGiBMin: 1.9, ETASeconds: 400})
		}
		evs = append(evs, ev(phases.KindLoadState, st))
	}
	stall := phases.Stall{GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, MemoryGiB: []float64{75.8, 75.8, 75.8, 75.8, 75.8, 75.8, 75.8, 75.8}, ForS: 720, Node: "gpu2"}
	evs = append(evs, ev(phases.KindLoadStall, stall), ev(phases.KindLoadServer, phases.ServerEvent{Action: "node_lost", Node: "gpu2", Detail: "node gpu2 lost: connection reset"}))
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: evs})
	m.SetSize(78, 19)
	v := m.View()
	for _, want := range []string{"gpu1 ", "61.4/ 61.8/ 62.1 GiB", "gpu2 ", "LOST", "STALLED at 75.8 GiB on gpu2, GPUs 0-7, for 12 min", "g: every GPU"} {
		if !strings.Contains(v, want) {
			t.Errorf("compact view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "GPU7") {
		t.Errorf("compact view shows single GPUs:\n%s", v)
	}
	panetest.Fits(t, v, 78, 19)
	press(m, "g")
	v = m.View()
	if !strings.Contains(v, "── gpu1 · 8 GPUs") || !strings.Contains(v, "GPU0") {
		t.Errorf("expanded view:\n%s", v)
	}
	panetest.Fits(t, v, 78, 19)
	press(m, "g")
	m.SetSize(120, 40)
	v = m.View()
	if !strings.Contains(v, "── gpu2 · 8 GPUs · weights · LOST") || !strings.Contains(v, "GPU7") || !strings.Contains(v, "ETA 7 min") || !strings.Contains(v, "29.1 s/shard ETA 25 min") {
		t.Errorf("tall view:\n%s", v)
	}
	panetest.Fits(t, v, 120, 40)
}

// The full log scrolls a line, half a screen, to the oldest line at the
// top (never to a lone line) and back; l and esc both close it.
func TestFullLogScrolls(t *testing.T) {
	m := bare()
	var evs []phases.Event
	for i := range 60 {
		evs = append(evs, phases.New(time.Unix(1000+int64(i)*20, 0), phases.KindLoadLog,
			phases.LogLine{Rank: -1, Level: "INFO", Msg: fmt.Sprintf("line %02d", i)}))
	}
	m.Update(common.EventsMsg{At: time.Unix(3000, 0), Events: evs})
	press(m, "l")
	if v := m.View(); !strings.Contains(v, "line 59") || strings.Contains(v, "line 00") {
		t.Fatalf("full log does not follow the newest line:\n%s", v)
	}
	press(m, "g")
	v := m.View()
	if !strings.Contains(v, "line 00") || !strings.Contains(v, "line 16") || strings.Contains(v, "line 17") {
		t.Errorf("g: want lines 00–16 on screen:\n%s", v)
	}
	panetest.Fits(t, v, 78, 19)
	m.Update(tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl})
	if v := m.View(); !strings.Contains(v, "line 08") || strings.Contains(v, "line 07") {
		t.Errorf("ctrl+d: want half a screen down:\n%s", v)
	}
	press(m, "G")
	if v := m.View(); !strings.Contains(v, "line 59") {
		t.Errorf("G: newest line not shown:\n%s", v)
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
	if m.fullLog {
		t.Error("esc did not close the full log")
	}
	press(m, "l")
	press(m, "l")
	if m.fullLog {
		t.Error("l did not close the full log")
	}
}

// A question too long for one line takes two: what the restart costs and
// how the profiler is turned on both show, with the answer keys.
func TestLongQuestionWraps(t *testing.T) {
	m := bare()
	m.confirm = &confirmation{prompt: "Restart with the torch profiler? It costs a full reload (last load 29m 40s); uses --profiler-config"}
	v := m.View()
	for _, want := range []string{"Restart with the torch profiler?", "last load 29m", "uses --profiler-config (y/n)"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	panetest.Fits(t, v, 78, 19)
	m.confirm.prompt = "The server is serving. Stop it and free the GPUs?"
	m.dirty = true // set behind Update's back, as no key would
	if v := m.View(); !strings.Contains(v, "free the GPUs? (y/n)") {
		t.Errorf("short question:\n%s", v)
	}
}

// The header's time in the current stage is the milestone line's: a load
// 8 s in that entered weights at 2 s reads "weights 6 s" in both, and a
// finished stage shows how long it lasted.
func TestMilestoneTimesAgreeWithHeader(t *testing.T) {
	m := bare()
	m.SetSize(120, 24)
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: []phases.Event{
		ev(phases.KindLoadMilestone, phases.Milestone{Stage: "weights", AtS: 2}),
		ev(phases.KindLoadState, phases.LoadState{Host: "gpu1", Stage: "weights", ElapsedS: 8}),
	}})
	v := m.View()
	if !strings.Contains(v, "weights 6 s · 8 s in all") || !strings.Contains(v, "▶weights 6 s") {
		t.Fatalf("header and milestone disagree:\n%s", v)
	}
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: []phases.Event{
		ev(phases.KindLoadMilestone, phases.Milestone{Stage: "kv_cache", AtS: 20}),
		ev(phases.KindLoadState, phases.LoadState{Host: "gpu1", Stage: "kv_cache", ElapsedS: 23}),
	}})
	v = m.View()
	if !strings.Contains(v, "✓weights 18 s") || !strings.Contains(v, "▶KV cache 3 s") || !strings.Contains(v, "KV cache 3 s · 23 s in all") {
		t.Fatalf("after weights:\n%s", v)
	}
}

// Several nodes: the head is first whichever node answered first, so the
// title and the shard bar are the head's.
func TestNodesHeadFirst(t *testing.T) {
	m := bare()
	m.d.Nodes = []remote.Host{namedHost("gpu1"), namedHost("gpu2")}
	var evs []phases.Event
	for _, h := range []string{"gpu2", "gpu1"} {
		st := phases.LoadState{Host: h, Stage: "weights"}
		if h == "gpu1" {
			st.ShardsDone, st.ShardsTotal = 10, 62
		}
		evs = append(evs, ev(phases.KindLoadState, st))
	}
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: evs})
	m.SetSize(78, 19)
	v := m.View()
	if !strings.Contains(v, "Server/Load · gpu1 +1") || !strings.Contains(v, "10/62") {
		t.Errorf("view:\n%s", v)
	}
}

// namedHost is a host that only has a name.
type namedHost string

func (h namedHost) Name() string { return string(h) }
func (namedHost) Run(context.Context, string, io.Reader, func(remote.Line)) error {
	return errors.New("no")
}
func (namedHost) ReadFile(context.Context, string) ([]byte, error) { return nil, errors.New("no") }
func (namedHost) WriteFile(context.Context, string, []byte, os.FileMode) error {
	return errors.New("no")
}
func (namedHost) Follow(context.Context, string, int64, func(remote.FollowEvent)) error {
	return errors.New("no")
}
func (namedHost) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no")
}
func (namedHost) Close() error { return nil }

// Two stalled nodes: the banner names the one stalled longest (it stopped
// first; the head then waits for it), with that node's diagnosis, even
// when the head's stall and diagnosis came later.
func TestBannerNamesTheNodeThatStoppedFirst(t *testing.T) {
	m := bare()
	gpus := []int{0, 1, 2, 3, 4, 5, 6, 7}
	var evs []phases.Event
	for _, n := range []struct {
		host string
		gib  float64
		forS float64
	}{{"gpu2", 40, 14}, {"gpu1", 74.9, 9}} {
		st := phases.LoadState{Host: n.host, Stage: "weights"}
		for i := range gpus {
			st.GPUs = append(st.GPUs, phases.GPULoad{Index: i, Known: true, UsedGiB: n.gib, ExpectedGiB: 74.9, TotalGiB: 140.4})
		}
		st.Stall = &phases.Stall{GPUs: gpus, MemoryGiB: []float64{n.gib}, ForS: n.forS, Node: n.host}
		evs = append(evs, ev(phases.KindLoadState, st), ev(phases.KindLoadStall, *st.Stall),
			ev(phases.KindLoadDiagnosis, phases.Diagnosis{Node: n.host, Trigger: "stall", Verdict: "verdict of " + n.host}))
	}
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: evs})
	m.SetSize(78, 19)
	v := m.View()
	if !strings.Contains(v, "STALLED at 40.0 GiB on gpu2") || !strings.Contains(v, "why (gpu2): verdict of gpu2") {
		t.Errorf("banner does not name the node stalled longest:\n%s", v)
	}
	panetest.Fits(t, v, 78, 19)
}

// The pane's help names each key once.
func TestHelpListsEachKeyOnce(t *testing.T) {
	m := bare()
	seen := map[string]bool{}
	for _, col := range m.FullHelp() {
		for _, b := range col {
			k := b.Help().Key
			if seen[k] {
				t.Fatalf("key %q listed twice in the help", k)
			}
			seen[k] = true
		}
	}
}

// While stalled no ETA counts down, on the shards or on a GPU; the
// weights' total is named so that the whole GPU's, later, is no surprise.
func TestStalledShowsNoETA(t *testing.T) {
	m := bare()
	gs := eight(60, 1.9)
	st := phases.LoadState{Host: "gpu1", Stage: phases.StageWeights, ElapsedS: 900, GPUs: gs,
		ShardsDone: 40, ShardsTotal: 62, ShardETA: 280, ShardSecPerIt: 9.1}
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: []phases.Event{ev(phases.KindLoadState, st)}})
	if v := sized(m, 120, 36); !strings.Contains(v, "ETA") || !strings.Contains(v, "/74.9 GiB  80% weights") {
		t.Fatalf("a moving load shows its ETA and names the weights' total:\n%s", v)
	}
	st.Stall = &phases.Stall{GPUs: []int{0}, ForS: 120, MemoryGiB: []float64{60}}
	m.Update(common.EventsMsg{At: time.Unix(1001, 0), Events: []phases.Event{ev(phases.KindLoadState, st)}})
	if v := sized(m, 120, 36); strings.Contains(v, "ETA") {
		t.Fatalf("a stalled load counts an ETA:\n%s", v)
	}
}

// The stall banner shows the waits the log itself printed, at 120×36 and
// at 80×24.
func TestStallBannerShowsTheLogsWaits(t *testing.T) {
	m := bare()
	st := phases.LoadState{Host: "gpu1", Stage: phases.StageCUDAGraphs, ElapsedS: 900, GPUs: eight(60, 1.9)}
	st.Stall = &phases.Stall{GPUs: []int{0}, ForS: 300, MemoryGiB: []float64{60}, Line: "Capturing CUDA graphs",
		Waits: "3 shared-memory broadcast waits of 60 s, the last at 08:05:02"}
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: []phases.Event{ev(phases.KindLoadState, st)}})
	for _, size := range [][2]int{{120, 36}, {80, 24}} {
		v := sized(m, size[0], size[1])
		if !strings.Contains(v, "» the log says: 3 shared-memory broadcast") {
			t.Errorf("%dx%d: no waits under the banner:\n%s", size[0], size[1], v)
		}
	}
}

// The pane is drawn once per batch of events, key or resize, not per
// frame: View again with nothing new, the clock's tick or an empty batch
// returns the drawing it has.
func TestDrawnOncePerChange(t *testing.T) {
	m := bare()
	state := func(gib float64) common.EventsMsg {
		return common.EventsMsg{At: time.Unix(1000, 0), Events: []phases.Event{
			ev(phases.KindLoadState, phases.LoadState{Host: "gpu1", Stage: "weights", ElapsedS: gib,
				GPUs: []phases.GPULoad{{Index: 0, Known: true, UsedGiB: gib, TotalGiB: 80}}}),
		}}
	}
	m.Update(state(10))
	first := m.View()
	n := m.draws
	for range 5 {
		if v := m.View(); v != first {
			t.Fatal("the view changed with nothing new")
		}
	}
	m.Update(common.TickMsg{At: time.Unix(1001, 0)})
	m.Update(common.EventsMsg{At: time.Unix(1001, 0)})
	m.View()
	if m.draws != n {
		t.Fatalf("drawn %d times more with nothing new (views, a tick, an empty batch)", m.draws-n)
	}
	for _, step := range []struct {
		name string
		do   func()
	}{
		{"a batch of events", func() { m.Update(state(20)) }},
		{"a key", func() { press(m, "l") }},
		{"a resize", func() { m.SetSize(100, 30) }},
	} {
		before := m.draws
		step.do()
		m.View()
		m.View()
		if m.draws != before+1 {
			t.Errorf("%s: drawn %d times, want once", step.name, m.draws-before)
		}
	}
	if v := m.View(); !strings.Contains(v, "full log") {
		t.Errorf("the key's change is not drawn:\n%s", v)
	}
	press(m, "l")
	if v := m.View(); !strings.Contains(v, "20.0/80") {
		t.Errorf("the new batch is not drawn:\n%s", v)
	}
}

// BenchmarkView is a frame of the pane at 120×40 with eight loading GPUs
// and a full log: as drawn when nothing changed (the cached drawing), and
// when a batch of events came (drawn again).
func BenchmarkView(b *testing.B) {
	m := bare()
	m.SetSize(120, 40)
	var gpus []phases.GPULoad
	for i := range 8 {
		gpus = append(gpus, phases.GPULoad{Index: i, Known: true, UsedGiB: 40, TotalGiB: 80, ExpectedGiB: 70})
	}
	evs := []phases.Event{ev(phases.KindLoadState, phases.LoadState{Host: "gpu1", Stage: "weights", ElapsedS: 300, GPUs: gpus})}
	for i := range maxLog {
		evs = append(evs, ev(phases.KindLoadLog, phases.LogLine{Rank: i % 8, Msg: fmt.Sprintf("line %d", i), Text: fmt.Sprintf("line %d", i)}))
	}
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: evs})
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			m.View()
		}
	})
	b.Run("new batch", func(b *testing.B) {
		for b.Loop() {
			m.dirty = true
			m.View()
		}
	})
}

// A failure after the server was ready reads as a run-time one, with the
// part that failed; never as a start that failed.
func TestBannerRuntimeFailure(t *testing.T) {
	for _, c := range []struct {
		f    phases.LoadFailure
		want string
	}{
		{phases.LoadFailure{Kind: "engine_failed", When: "serving", Component: "engine_core", Rank: -1}, "the engine core died while serving"},
		{phases.LoadFailure{Kind: "oom", When: "serving", Component: "worker", Rank: 2}, "CUDA out of memory while serving (worker)"},
		{phases.LoadFailure{Kind: "unknown", When: "startup", Component: "loader", Rank: -1}, "an error (loader)"},
	} {
		m := bare()
		m.SetSize(120, 19)
		m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: []phases.Event{ev(phases.KindLoadFailure, c.f)}})
		if v := m.View(); !strings.Contains(v, c.want) || strings.Contains(v, "failed to start") {
			t.Errorf("%+v: banner lacks %q:\n%s", c.f, c.want, v)
		}
	}
}
