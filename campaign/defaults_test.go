package campaign

import (
	"reflect"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/defaultstest"
)

// The engines' tests fill what a test leaves out with a copy of the
// campaign's defaults (package defaultstest, as the engines may not import
// the campaign): each copied value is the one the campaign's mapping gives
// the engine from Defaults, so that a default changed here, or in the copy,
// alone fails.
func TestEngineTestsCompleteWithTheCampaignDefaults(t *testing.T) {
	c := Defaults()
	for _, e := range []struct {
		engine     string
		cfg, table any
	}{
		{"macro (SweepConfig)", c.SweepConfig(""), defaultstest.Macro},
		{"profile (ProfileConfig)", c.ProfileConfig(""), defaultstest.Profile},
		{"load (LoadConfig)", c.LoadConfig(), defaultstest.Load},
		{"micro (MicroConfig)", c.MicroConfig(), defaultstest.Micro},
		{"nccl (NCCLConfig)", c.NCCLConfig(), defaultstest.NCCL},
	} {
		for _, d := range defaultstest.Differences(e.cfg, e.table) {
			t.Errorf("%s: %s", e.engine, d)
		}
	}
}

// The engines hold no defaults: the campaign's engine configurations carry
// every value the engines used to fill in themselves, the same values
// (written here as numbers, so that a default that changes fails).
func TestEngineConfigsCarryTheDefaults(t *testing.T) {
	c := Defaults()
	m, n := c.MicroConfig(), c.NCCLConfig()
	got := []any{m.Python, m.WorkDir, n.Torchrun, n.Python, n.WorkDir, n.Batch, n.Tokens, n.MasterPort, n.NProc}
	want := []any{"python3", "/tmp/profdeck-{uid}", "torchrun", "python3", "/tmp/profdeck-{uid}", []int{1, 8, 64, 128},
		[]int{1, 2, 4, 8, 16, 32, 64, 128, 256}, 29500, 8}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("micro and nccl:\n got %v\nwant %v", got, want)
	}
	c.NCCL.MasterPort = 29600
	if p := c.NCCLConfig().MasterPort; p != 29600 {
		t.Errorf("nccl.master_port 29600 gave %d", p)
	}
	s := c.SweepConfig("")
	got = []any{s.Timeout, s.ClientBoundLag, s.SearchFrom}
	want = []any{10 * time.Minute, 10 * time.Millisecond, 1.0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sweep:\n got %v\nwant %v", got, want)
	}
	l := c.LoadConfig()
	if l.LogPath != "/var/log/vllm/server.log" || l.StallAfter != 5*time.Minute || l.Poll != time.Second ||
		l.SnapshotEvery != 10*time.Second || l.DiagnoseWindow != 2*time.Second {
		t.Errorf("load: %+v", l)
	}
	if srv := c.NewServer(nil); srv.StopTimeout != 3*time.Minute || srv.ReleasedBelowGiB != 2 || srv.Settings.Log != "/var/log/vllm/server.log" {
		t.Errorf("server: stop %s, released below %g GiB, log %q", srv.StopTimeout, srv.ReleasedBelowGiB, srv.Settings.Log)
	}
}
