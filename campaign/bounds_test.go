package campaign

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// What ends a level, from the file's macro.requests and macro.duration and
// the flags over them: 0 is "no bound of this kind" (from a flag as from
// the file), a count or a time given alone is the one bound, and a level
// that nothing ends is refused in one line naming both settings.
func TestLevelBounds(t *testing.T) {
	const reqDur = "macro:\n  requests: 9\n  duration: 1m\n"
	for _, tc := range []struct {
		name, file string
		args       []string
		req        int
		dur        time.Duration
		wantErr    string
	}{
		{name: "file both", file: reqDur, req: 9, dur: time.Minute},
		{name: "file duration 0", file: "macro:\n  requests: 9\n  duration: 0s\n", req: 9},
		{name: "file duration 0 alone", file: "macro:\n  duration: 0s\n", req: DefaultRequests},
		{name: "file requests 0", file: "macro:\n  requests: 0\n  duration: 1m\n", dur: time.Minute},
		{name: "file both 0", file: "macro:\n  requests: 0\n  duration: 0s\n",
			wantErr: "line 2: macro.requests and line 3: macro.duration: both 0, so nothing ends a level"},
		{name: "file requests 0 alone", file: "macro:\n  requests: 0\n",
			wantErr: "line 2: macro.requests and macro.duration: both 0"},
		{name: "--duration 0 keeps the count", file: reqDur, args: []string{"--duration", "0"}, req: 9},
		{name: "--duration 0 over a time budget alone", file: "macro:\n  duration: 1m\n", args: []string{"--duration", "0s"}, req: DefaultRequests},
		{name: "--requests 0 keeps the time", file: reqDur, args: []string{"--requests", "0"}, dur: time.Minute},
		{name: "--duration alone is the one bound", file: reqDur, args: []string{"--duration", "30s"}, dur: 30 * time.Second},
		{name: "--requests alone is the one bound", file: reqDur, args: []string{"--requests", "5"}, req: 5},
		{name: "both flags, whichever last", file: reqDur, args: []string{"--requests", "5", "--duration", "2s"}, req: 5, dur: 2 * time.Second},
		{name: "both flags, time only", file: reqDur, args: []string{"--requests", "0", "--duration", "2s"}, dur: 2 * time.Second},
		{name: "both flags 0", file: reqDur, args: []string{"--requests", "0", "--duration", "0"},
			wantErr: "--requests and --duration: both 0, so nothing ends a level: set a request count or a duration per level"},
		{name: "--requests 0 with no time", file: "macro:\n  requests: 9\n", args: []string{"--requests", "0"},
			wantErr: "--requests and macro.duration: both 0"},
		{name: "--duration 0 over a file's requests 0", file: "macro:\n  requests: 0\n  duration: 1m\n", args: []string{"--duration", "0"},
			wantErr: "line 2: macro.requests and --duration: both 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.file))
			if err == nil {
				err = applyBounds(t, c, tc.args)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err %v, want one line starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m := c.Macro; m.Requests != tc.req || m.Duration.Duration != tc.dur {
				t.Errorf("requests %d duration %s, want %d and %s", m.Requests, m.Duration.Duration, tc.req, tc.dur)
			}
			// Every front-end's sweep (the sweep command, the campaign run,
			// the cockpit's Macro pane) takes the same mapping.
			cfg := c.SweepConfig("")
			if cfg.Requests != tc.req || cfg.Duration != tc.dur {
				t.Errorf("sweep config: requests %d duration %s", cfg.Requests, cfg.Duration)
			}
			if c.Host = "sim"; c.Model.Preset == "" {
				c.Model.Preset = "kimi-k2.5"
			}
			run, err := c.CampaignRunConfig("")
			if err != nil || run.Sweep.Requests != tc.req || run.Sweep.Duration != tc.dur {
				t.Errorf("campaign run: requests %d duration %s (%v)", run.Sweep.Requests, run.Sweep.Duration, err)
			}
		})
	}
}

// applyBounds gives the sweep's --requests and --duration flags over c and
// checks the result as a command does.
func applyBounds(t *testing.T, c *Campaign, args []string) error {
	t.Helper()
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("requests", 0, "")
	fs.Duration("duration", 0, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(fs, Flag{"requests", "macro.requests"}, Flag{"duration", "macro.duration"}); err != nil {
		return err
	}
	return c.Check()
}
