package macropane

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
)

// liveSeconds cuts the recorded sweep into one-second groups of events
// (a tick and the server's scrape) from its busiest levels, for the
// benchmarks to feed again and again.
func liveSeconds(b *testing.B) [][]phases.Event {
	evs := loadEvents(b)
	var out [][]phases.Event
	var cur []phases.Event
	for _, ev := range evs {
		switch ev.Kind {
		case phases.KindMacroServer:
			cur = append(cur, ev)
		case phases.KindMacroTick:
			cur = append(cur, ev)
			out = append(out, cur)
			cur = nil
		}
	}
	return out[len(out)/3:]
}

// restamp gives a second's events the time at.
func restamp(evs []phases.Event, at time.Time) []phases.Event {
	out := make([]phases.Event, len(evs))
	for i, ev := range evs {
		ev.Time = at
		if st, ok := ev.Data.(phases.ServerStats); ok {
			st.At = at
			ev.Data = st
		}
		out[i] = ev
	}
	return out
}

// livePane is a w×h pane with a whole sweep behind it, mid-level, with
// the client-bound banner and the plateau: every widget on screen.
func livePane(b *testing.B, w, h int) (*Model, [][]phases.Event) {
	m := newPane(b, w, h, true)
	replay(m, loadEvents(b), -1)
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{
		phases.New(clock0, phases.KindMacroClientBound, phases.ClientBound{Concurrency: 256, Reason: "client used 95% of 2 cores"}),
		phases.New(clock0, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 256, Requests: 512}),
	}})
	return m, liveSeconds(b)
}

// BenchmarkView200x50 is the cost of one frame's View with every widget
// live and nothing new since the last batch (the renderer asks for View
// after every message).
func BenchmarkView200x50(b *testing.B) {
	m, secs := livePane(b, 200, 50)
	m.Update(common.EventsMsg{At: clock0, Events: restamp(secs[0], clock0)})
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	n := 0
	for i := 0; i < b.N; i++ {
		n += len(m.View())
	}
	reportCPU(b, c0)
	if n == 0 {
		b.Fatal("empty view")
	}
}

// BenchmarkFrame200x50 is a frame that carries a new second: the batch
// is applied, all four charts, the table and the lines are redrawn, and
// View returns the result. This is the most a frame ever costs.
func BenchmarkFrame200x50(b *testing.B) {
	m, secs := livePane(b, 200, 50)
	at := clock0
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		at = at.Add(time.Second)
		m.Update(common.EventsMsg{At: at, Events: restamp(secs[i%len(secs)], at)})
		if len(m.View()) == 0 {
			b.Fatal("empty view")
		}
	}
	reportCPU(b, c0)
}

// reportCPU adds the process's CPU time per operation since c0: on a
// machine shared with other work, wall time per op overstates the cost.
func reportCPU(b *testing.B, c0 time.Duration) {
	if d := cpuTime() - c0; d > 0 {
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// host wraps the pane as a program's model, the way the root does.
type host struct{ p *Model }

func (h host) Init() tea.Cmd { return nil }
func (h host) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.WindowSizeMsg); ok {
		return h, nil
	}
	_, cmd := h.p.Update(msg)
	return h, cmd
}
func (h host) View() tea.View { v := tea.NewView(h.p.View()); v.AltScreen = true; return v }

// countingWriter counts what the program writes and keeps the start of
// it, to check that it drew the pane.
type countingWriter struct {
	n     atomic.Int64
	mu    sync.Mutex
	start []byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	w.mu.Lock()
	if len(w.start) < 1<<16 {
		w.start = append(w.start, p...)
	}
	w.mu.Unlock()
	return len(p), nil
}

// BenchmarkTerminalBytes runs a real program with the pane at 200×50 (and
// 80×24), fed like the root feeds it (a batch every 250 ms, one new second
// of samples every fourth batch), and reports the bytes written to the
// terminal per second in steady state. Each iteration is one second of
// wall time; run it with -benchtime=8x or so.
func BenchmarkTerminalBytes(b *testing.B) {
	for _, sz := range [][2]int{{200, 50}, {80, 24}} {
		b.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(b *testing.B) { terminalBytes(b, sz[0], sz[1]) })
	}
}

func terminalBytes(b *testing.B, w, h int) {
	m, secs := livePane(b, w, h)
	out := &countingWriter{}
	p := tea.NewProgram(host{m}, tea.WithInput(nil), tea.WithOutput(out), tea.WithWindowSize(w, h),
		tea.WithColorProfile(colorprofile.ANSI256), tea.WithoutSignals(),
		tea.WithEnvironment([]string{"TERM=screen-256color", "TERM_PROGRAM=tmux", "SSH_TTY=/dev/pts/1"}))
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	at := clock0
	i := 0
	second := func() {
		for q := 0; q < 4; q++ {
			time.Sleep(250 * time.Millisecond)
			var evs []phases.Event
			if q == 0 {
				at = at.Add(time.Second)
				evs = restamp(secs[i%len(secs)], at)
				i++
			}
			p.Send(common.EventsMsg{At: at, Events: evs})
		}
	}
	// Warm up: the first frame draws the whole screen.
	second()
	second()
	start, base := time.Now(), out.n.Load()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		second()
	}
	b.StopTimer()
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(float64(out.n.Load()-base)/elapsed, "B/s")
	b.ReportMetric(float64(base), "warmup-B")
	out.mu.Lock()
	drawn := strings.Contains(ansi.Strip(string(out.start)), "Macro sweep")
	out.mu.Unlock()
	if !drawn {
		b.Fatal("the program never drew the pane")
	}
	p.Quit()
	select {
	case err := <-done:
		if err != nil {
			b.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		b.Fatal("program did not quit")
	}
}
