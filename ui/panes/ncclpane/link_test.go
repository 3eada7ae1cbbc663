package ncclpane

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
)

// With the link known, each burst row gives its bus bandwidth against the
// link's peak, and each All-to-All row its busbw's share: 1.75 MiB ×
// 2·(2−1)/2 in 37.0 µs is 49.6 GB/s, 10.4% of an 18-link NVLink's 478.
func TestLinkShares(t *testing.T) {
	b := phases.NCCLBurst{M: 128, Count: 123, Bytes: 1835008, TotalMs: 5.156, PerOpUs: 41.9, NProc: 2, GraphMs: 4.545, GraphPerOpUs: 37.0}
	l := &phases.NCCLLink{Kind: "NVLink", PeakGB: 478.116, Detail: "18 links (nvidia-smi nvlink -s)"}
	if bw, pct := burstBusBW(b, l); bw != "49.6" || pct != "10.4%" {
		t.Fatalf("busbw %s, %s", bw, pct)
	}
	if bw, pct := burstBusBW(b, nil); bw != "49.6" || pct != "-" {
		t.Fatalf("without a link: %s, %s", bw, pct)
	}
	b.GraphPerOpUs, b.NProc = 0, 1
	if bw, _ := burstBusBW(b, l); bw != "-" {
		t.Fatalf("one rank moves no data, got %s", bw)
	}
	m := New(&common.Deps{Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: func() time.Time { return at }})
	evs := measured(t)
	evs = append(evs[:1], append([]phases.Event{phases.New(at, phases.KindNCCLLink, l)}, evs[1:]...)...)
	m.Update(common.EventsMsg{At: at, Events: evs})
	v := ansi.Strip(sized(m, 120, 40))
	for _, want := range []string{"link: NVLink 478 GB/s per direction per GPU, 18 links", "% link", "10.4%"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
}
