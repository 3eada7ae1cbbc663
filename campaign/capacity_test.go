package campaign

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// The capacity section: read, defaulted, checked (each error naming the
// line and key, or the flag), and flags win over it.
func TestCapacitySection(t *testing.T) {
	c, err := Parse([]byte("capacity:\n  users: 500\n  think_time: 30s\n  slo: tpot=40ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if errs := c.Validate(); len(errs) != 0 {
		t.Fatal(errs)
	}
	a := c.Capacity.Ask()
	if a == nil || a.Users != 500 || a.Think != 30*time.Second || a.SLO != "tpot=40ms" || a.Headroom != DefaultHeadroom {
		t.Fatalf("ask %+v", a)
	}
	if Defaults().Capacity.Ask() != nil {
		t.Error("the defaults ask for a plan")
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Float64("headroom", 0.2, "")
	fs.Int("users", 0, "")
	fs.Parse([]string{"--headroom", "0", "--users", "20"})
	if err := c.ApplyFlags(fs, Flag{"headroom", "capacity.headroom"}, Flag{"users", "capacity.users"}); err != nil {
		t.Fatal(err)
	}
	if c.Capacity.Headroom != 0 || c.Capacity.Users != 20 {
		t.Fatalf("flags did not win: %+v", c.Capacity)
	}
	for text, want := range map[string]string{
		"capacity:\n  rate: 3\n  users: 2\n":       "line 3: capacity.users: capacity.rate is set too",
		"capacity:\n  rate: -1\n":                  "line 2: capacity.rate",
		"capacity:\n  rate: 1\n  think_time: 5s\n": "capacity.think_time: goes with capacity.users",
		"capacity:\n  rate: 1\n  headroom: 1\n":    "capacity.headroom: want a share",
		"capacity:\n  rate: 1\n  slo: tpot=soon\n": "capacity.slo",
		"capacity:\n  rate: 1\n  replicas: 2\n":    "unknown key capacity.replicas",
		"cost:\n  gpu_hour: -2\n":                  "line 2: cost.gpu_hour: want dollars per GPU-hour",
		"cost:\n  gpu_hour: .nan\n":                "cost.gpu_hour: want dollars per GPU-hour",
		"cost:\n  per_token: 1\n":                  "unknown key cost.per_token",
	} {
		c, err := Parse([]byte(text))
		if err == nil {
			err = c.Check()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}
