package campaign

import (
	"flag"
	"fmt"
	"slices"
	"testing"
)

// TestQuickSimSetsOnlyWhatIsLeftAtItsDefault: on host sim the sweep's
// requests, output length and warm-up left at their defaults become the
// quick ones, and the load time too when asked; a key the file or a flag
// sets, and another host, keep theirs.
func TestQuickSimSetsOnlyWhatIsLeftAtItsDefault(t *testing.T) {
	c, err := Parse(Example)
	if err != nil {
		t.Fatal(err)
	}
	got := c.QuickSim(true)
	want := []string{"macro.requests 16", "macro.output_len 64", "macro.warmup 2", "sim.load_time 20s"}
	if !slices.Equal(got, want) || c.Macro.Requests != SimRequests || c.Macro.OutputLen != SimOutputLen || c.Sim.LoadTime.Duration != SimLoadTime {
		t.Fatalf("example on sim: %q, %+v", got, c.Macro)
	}
	if err := c.Check(); err != nil {
		t.Fatalf("the quick campaign does not check: %v", err)
	}

	c, err = Parse([]byte("host: sim\nmacro:\n  requests: 64\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("output-len", 0, "")
	if err := fs.Parse([]string{"--output-len", "256"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(fs, Flag{Name: "output-len", Key: "macro.output_len"}); err != nil {
		t.Fatal(err)
	}
	if got := c.QuickSim(false); !slices.Equal(got, []string{"macro.warmup 2"}) || c.Macro.Requests != 64 || c.Macro.OutputLen != 256 || c.Sim.LoadTime.Duration != 0 {
		t.Fatalf("set keys: %q, %+v, load %v", got, c.Macro, c.Sim.LoadTime)
	}

	c, err = Parse([]byte("host: gpu1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.QuickSim(true); got != nil || c.Macro.Requests != 64 {
		t.Fatalf("another host: %q, requests %d", got, c.Macro.Requests)
	}
}

// TestQuickSimKeepsATypedDefault: a value typed equal to the default, by
// a flag or in the file, is the user's and stays; only keys nobody set
// get the quick settings.
func TestQuickSimKeepsATypedDefault(t *testing.T) {
	c, err := Parse([]byte("host: sim\nmacro:\n  warmup: " + fmt.Sprint(Defaults().Macro.Warmup) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("requests", 0, "")
	fs.Int("output-len", 0, "")
	args := []string{"--requests", fmt.Sprint(DefaultRequests), "--output-len", fmt.Sprint(DefaultOutputLen)}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(fs, Flag{Name: "requests", Key: "macro.requests"}, Flag{Name: "output-len", Key: "macro.output_len"}); err != nil {
		t.Fatal(err)
	}
	got := c.QuickSim(true)
	if !slices.Equal(got, []string{"sim.load_time 20s"}) || c.Macro.Requests != DefaultRequests ||
		c.Macro.OutputLen != DefaultOutputLen || c.Macro.Warmup != Defaults().Macro.Warmup {
		t.Fatalf("typed defaults replaced: %q, %+v", got, c.Macro)
	}
}
