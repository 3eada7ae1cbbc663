package macropane

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

var record = flag.Bool("record", false, "re-record testdata/sweep.jsonl from a sweep of the emulator (about 40 s)")

// recorded is the sweep the model tests replay: every event (ticks and
// server scrapes included) of a real sweep of the emulator, recorded with
// -record.
const recorded = "testdata/sweep.jsonl"

// TestRecordSweep records a real sweep of the emulator when -record is
// given; otherwise it checks that the recording still decodes into the
// event types the pane reads.
func TestRecordSweep(t *testing.T) {
	if !*record {
		evs := loadEvents(t)
		kinds := map[string]int{}
		for _, ev := range evs {
			kinds[ev.Kind]++
		}
		for _, k := range []string{phases.KindMacroLevelStarted, phases.KindMacroTick, phases.KindMacroServer, phases.KindMacroLevel, phases.KindMacroPlateau} {
			if kinds[k] == 0 {
				t.Errorf("recording has no %s event (kinds: %v); re-record with -record", k, kinds)
			}
		}
		return
	}
	emu := vllmemu.New(vllmemu.Config{CoarseTiming: true})
	srv := httptest.NewServer(emu)
	defer func() { srv.CloseClientConnections(); srv.Close(); emu.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sw, err := macro.NewSweep(macro.Config{API: macro.APICompletions, Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent,
		URL: srv.URL, Concurrency: []int{1, 2, 4, 8, 16, 32, 64, 128, 256},
		Duration: 4 * time.Second, Requests: 2000, Warmup: 1, InputLen: 128, OutputLen: 64, Seed: 1,
		Scraper: servermetrics.NewScraper(srv.URL+"/metrics", srv.Client())})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan phases.Event, 1<<16)
	done := make(chan struct{})
	f, err := os.Create(recorded)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	go func() {
		defer close(done)
		enc := json.NewEncoder(w)
		for ev := range ch {
			if err := enc.Encode(ev); err != nil {
				t.Error(err)
			}
		}
	}()
	if _, err := sw.Run(ctx, &phases.Emitter{Out: ch}); err != nil {
		t.Fatal(err)
	}
	close(ch)
	<-done
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func loadEvents(t testing.TB) []phases.Event {
	t.Helper()
	f, err := os.Open(recorded)
	if err != nil {
		t.Fatalf("%v (record it with go test ./ui/panes/macropane -run TestRecordSweep -record)", err)
	}
	defer f.Close()
	var out []phases.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		ev, err := phases.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", recorded, err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
