package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/doctor"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/remote/ssh"
)

const doctorUsage = `profdeck doctor [-c FILE] [--host HOST] [--json FILE|-]

Checks in seconds, before a load that may take half an hour, everything the
campaign needs, one line each: ok, warn or fail, what was found and, when it
is not ok, the fix. The host and its key, nvidia-smi and the GPUs, python3
with torch and CUDA (micro), torchrun (nccl), the engine's version, the
launch command's programs, the server's health, models, metrics and
tokenize when it is up, the profiler directory and its free space, the path
the load takes to the server (its round trip, and whether the SSH server
sends each write at once), and the campaign file's keys.

Exit 0 when every check passes (warnings allowed); 3 when something the
campaign needs fails; 2 for bad input (a flag, a campaign key: each bad key
is one fail line); 1 when the host cannot be reached at all (name, network,
login or host key: nothing else could be checked). profdeck run runs the
same checks first unless --skip-doctor.`

// doctorReport is what --json writes: the checks, and the time from the
// start (opening the host included).
type doctorReport struct {
	*doctor.Result
	TotalSeconds float64 `json:"total_seconds"`
}

// DoctorMain is `profdeck doctor`.
func DoctorMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := New("doctor", doctorUsage, stdout, stderr)
	if err := cmd.Parse(args); err != nil {
		return cmd.Exit(ctx, err)
	}
	start := time.Now()
	camp, fromFile, errs, err := doctorPlan(cmd)
	if err != nil && len(errs) == 0 {
		return cmd.Exit(ctx, err)
	}
	res := &doctor.Result{}
	if len(errs) > 0 {
		for _, e := range errs {
			res.Checks = append(res.Checks, phases.DoctorCheck{Name: "campaign", Status: phases.CheckFail, Found: e.Error(),
				Fix: "correct the key in " + orDefaults(camp.Path) + " or the flag"})
		}
		res.Host, res.Fails = camp.Host, len(errs)
		return doctorEnd(ctx, cmd, res, start, ExitBadInput)
	}
	res.Host = camp.Host
	h, err := cmd.OpenHost(ctx, camp, func(o *hosts.Options) {
		// Without a launch command, the simulated deployment has its
		// server already up, as for sweep; with one, nothing runs yet.
		if strings.TrimSpace(camp.Server.Launch) == "" {
			o.Sim.AutoStart, o.Sim.LoadTime = true, time.Millisecond
		}
	})
	if err != nil {
		if code := Code(ctx, err); code != ExitCannotRun {
			return cmd.Exit(ctx, err)
		}
		res.Checks = []phases.DoctorCheck{{Name: "host", Status: phases.CheckFail, Found: err.Error(), Fix: hostFix(err)}}
		res.Fails = 1
		return doctorEnd(ctx, cmd, res, start, ExitCannotRun)
	}
	defer h.Close()
	if d, ok := h.(*sim.Deployment); ok && strings.TrimSpace(camp.Server.Launch) == "" {
		for wait := time.Now(); !d.Ready() && time.Since(wait) < 2*time.Second; {
			time.Sleep(5 * time.Millisecond)
		}
	}
	cfg := camp.DoctorConfig(h, camp.APIKey())
	if !fromFile {
		cfg.Campaign = ""
	}
	res, err = doctor.Run(ctx, cfg, nil)
	if err != nil && ctx.Err() != nil {
		return cmd.Exit(ctx, err)
	}
	res.Checks = append(res.Checks, orderCheck(camp, res.Checks))
	code := ExitOK
	if res.Fails > 0 {
		code = ExitStepFailed
	}
	return doctorEnd(ctx, cmd, res, start, code)
}

// doctorPlan is the campaign with the flags over it. A file that cannot
// be read is err; values that are wrong are errs, every one of them (err
// is then the first, as bad input).
func doctorPlan(cmd *Command) (camp *campaign.Campaign, fromFile bool, errs []error, err error) {
	if camp, fromFile, err = cmd.campaignUnchecked(); err != nil {
		return nil, false, nil, err
	}
	if errs = camp.Validate(); len(errs) > 0 {
		return camp, fromFile, errs, &BadInputError{Err: errs[0]}
	}
	return camp, fromFile, nil, nil
}

// doctorEnd prints the checks and the count, writes --json and returns code.
func doctorEnd(ctx context.Context, cmd *Command, res *doctor.Result, start time.Time, code int) int {
	w := cmd.Human()
	fmt.Fprint(w, DoctorLines(res.Checks))
	total := time.Since(start).Seconds()
	fmt.Fprintf(w, "%d ok, %d warn, %d fail in %.1f s\n", len(res.Checks)-res.Warns-res.Fails, res.Warns, res.Fails, total)
	if err := cmd.WriteJSON(doctorReport{Result: res, TotalSeconds: total}); err != nil {
		return cmd.Exit(ctx, err)
	}
	return cmd.ExitCode(code)
}

// DoctorLines are the checks, one line each: status, name, what was found
// and, when it is not ok, the fix.
func DoctorLines(checks []phases.DoctorCheck) string {
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "%-4s  %-8s  %s", c.Status, c.Name, c.Found)
		if c.Fix != "" {
			fmt.Fprintf(&b, " — fix: %s", c.Fix)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// hostFix is what to do when the host could not be opened.
func hostFix(err error) string {
	var hk *ssh.HostKeyError
	if errors.As(err, &hk) {
		if hk.Changed {
			return "find out why the key changed before anything else; if the host was reinstalled, remove the old line"
		}
		return "check the fingerprint, then ssh to the host once to record it (or ssh.accept_new_host_key: true)"
	}
	return "check the host name, that sshd answers and that your key logs in (ssh -v HOST)"
}

func orDefaults(path string) string {
	if path == "" {
		return "the flags"
	}
	return path
}
