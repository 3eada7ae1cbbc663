package loadpane

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
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

// Two hosts: every GPU bar is labelled with its host and the pane still fits.
func TestViewTwoHostsFits(t *testing.T) {
	m := bare()
	var evs []phases.Event
	for _, h := range []string{"gpu1", "gpu2"} {
		st := phases.LoadState{Host: h, Stage: "weights", ShardsDone: 10, ShardsTotal: 62, ShardSecPerIt: 29.1, ShardETA: 1500}
		for i := 0; i < 8; i++ {
			st.GPUs = append(st.GPUs, phases.GPULoad{Index: i, Known: true, UsedGiB: 62.1, ExpectedGiB: 74.9, TotalGiB: 140.4, RateGiBMin: 1.9, ETASeconds: 400})
		}
		evs = append(evs, ev(phases.KindLoadState, st))
	}
	m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: evs})
	m.SetSize(78, 19)
	v := m.View()
	if !strings.Contains(v, "gpu1:GPU0") || !strings.Contains(v, "gpu2:GPU7") || !strings.Contains(v, "62.1/74.9 GiB  83%") {
		t.Errorf("view:\n%s", v)
	}
	checkFits(t, v, 78, 19)
	m.SetSize(120, 40)
	v = m.View()
	if !strings.Contains(v, "gpu2:GPU7") || !strings.Contains(v, "ETA 7 min") || !strings.Contains(v, "29.1 s/shard ETA 25 min") {
		t.Errorf("tall view:\n%s", v)
	}
	checkFits(t, v, 120, 40)
}
