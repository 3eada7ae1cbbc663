package headless

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/doctor"
	"github.com/profdeck/profdeck/phases/doctor/doctortest"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

type doctorOut struct {
	code           int
	stdout, stderr string
	doc            doctorReport
	checks         map[string]phases.DoctorCheck
}

func doctorCLI(t *testing.T, args ...string) doctorOut {
	t.Helper()
	out := filepath.Join(t.TempDir(), "doctor.json")
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := doctorOut{code: DoctorMain(ctx, append(args, "--json", out), &o, &e), stdout: o.String(), stderr: e.String()}
	d.doc.Result = &doctor.Result{}
	if b, err := os.ReadFile(out); err == nil {
		if err := json.Unmarshal(b, &d.doc); err != nil {
			t.Fatalf("--json: %v\n%s", err, b)
		}
	}
	d.checks = map[string]phases.DoctorCheck{}
	for _, c := range d.doc.Checks {
		d.checks[c.Name] = c
	}
	return d
}

func TestDoctorOnSim(t *testing.T) {
	d := doctorCLI(t, "--host", "sim")
	// The doctor's checks, then the order the run takes here.
	if d.code != ExitOK || len(d.doc.Checks) != len(doctor.Names())+1 || d.doc.Host != "sim" {
		t.Fatalf("exit %d, %d checks\n%s\n%s", d.code, len(d.doc.Checks), d.stdout, d.stderr)
	}
	// One line each, in order, with the fix on the warnings.
	lines := strings.Split(strings.TrimSpace(d.stdout), "\n")
	if o := d.checks["order"]; !strings.Contains(o.Found, "classic order: server.launch is empty") {
		t.Errorf("order: %+v, want the classic order and why (no launch command)", o)
	}
	for i, name := range doctor.Names() {
		if f := strings.Fields(lines[i]); len(f) < 3 || f[1] != name {
			t.Errorf("line %d: %q, want the %s check", i, lines[i], name)
		}
	}
	// Without a campaign the simulated server is up, and nobody can
	// restart it: a warning with its fix.
	if c := d.checks["server"]; c.Status != phases.CheckOK || !strings.Contains(c.Found, "health 200, models 200 [moonshotai/Kimi-K2.5], metrics 200, tokenize 200") {
		t.Errorf("server: %+v", c)
	}
	if !strings.Contains(d.stdout, "warn  launch    no server.launch") || !strings.Contains(d.stdout, "— fix: set server.launch") ||
		!strings.Contains(lines[len(lines)-1], "2 warn, 0 fail in") {
		t.Errorf("stdout:\n%s", d.stdout)
	}
	if !strings.Contains(d.stderr, "SIMULATED") || d.doc.TotalSeconds <= 0 || d.doc.TotalSeconds > 10 {
		t.Errorf("stderr %q, %.2f s", d.stderr, d.doc.TotalSeconds)
	}
}

// doctorCampaign writes a campaign checking the given host with the
// server at url, and returns its path.
func doctorCampaign(t *testing.T, hostLines, url string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "profdeck.yaml")
	writeDoctorFile(t, p, fmt.Sprintf("%s\nserver:\n  url: %s\n  launch: vllm serve test/model --port 8000\n  profiler_dir: %s\nmodel:\n  preset: kimi-k2.5\n  tp: 8\n",
		hostLines, url, filepath.Join(dir, "traces")))
	return p
}

func TestDoctorOnLocal(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{})
	t.Setenv("PATH", doctortest.Write(t, doctortest.Tools{GPUs: 8, Torchrun: true, VLLM: true})+":"+os.Getenv("PATH"))
	camp := doctorCampaign(t, "host: local", url)
	d := doctorCLI(t, "-c", camp)
	if d.code != ExitOK || d.doc.Fails != 0 {
		t.Fatalf("exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
	}
	if c := d.checks["server"]; c.Status != phases.CheckOK || !strings.Contains(c.Found, "health 200") {
		t.Errorf("server: %+v", c)
	}
	// Without torch, what micro needs fails: exit 3, the line says the fix.
	t.Setenv("PATH", doctortest.Write(t, doctortest.Tools{GPUs: 8, Torchrun: true, VLLM: true, NoTorch: true})+":"+os.Getenv("PATH"))
	d = doctorCLI(t, "-c", camp)
	if d.code != ExitStepFailed || !strings.Contains(d.stdout, "fail  python    python3 3.12.3 has no torch — fix: ") {
		t.Fatalf("exit %d\n%s", d.code, d.stdout)
	}
}

func TestDoctorThroughSSHD(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{})
	tools := doctortest.Write(t, doctortest.Tools{GPUs: 8, Torchrun: true, VLLM: true})
	srv := sshtest.Start(t, sshtest.Options{Env: []string{"PATH=" + tools + ":/usr/local/bin:/usr/bin:/bin"}})
	sshConfig := filepath.Join(t.TempDir(), "ssh_config")
	writeDoctorFile(t, sshConfig, "")
	hostLines := fmt.Sprintf("host: %s\nssh:\n  identity: %s\n  known_hosts: %s\n  config: %s", srv.Target(), srv.ClientKey, srv.KnownHosts, sshConfig)
	d := doctorCLI(t, "-c", doctorCampaign(t, hostLines, url))
	if d.code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s\nsshd:\n%s", d.code, d.stdout, d.stderr, srv.Log())
	}
	for name, want := range map[string]string{
		"host": "SSH, host key verified", "gpus": "8× NVIDIA H200", "python": "torch 2.9.0+cu129",
		"torchrun": tools + "/torchrun", "launch": tools + "/vllm",
	} {
		if c := d.checks[name]; c.Status != phases.CheckOK || !strings.Contains(c.Found, want) {
			t.Errorf("%s: %+v, want ok %q", name, c, want)
		}
	}
	// The path through sshd: a warn only when this loaded machine's round
	// trip is over 2 ms, with the fix.
	if c := d.checks["path"]; c.Status == phases.CheckFail || !strings.Contains(c.Found, "SSH via "+srv.Addr()+", sends at once: yes") ||
		!strings.Contains(c.Found, "round trip p50") || c.Status == phases.CheckWarn && !strings.Contains(c.Fix, "--loadgen host") {
		t.Errorf("path: %+v", c)
	}
	t.Logf("through sshd: %.2f s", d.doc.TotalSeconds)

	// A host whose key is not known: exit 1, one fail line with the fix.
	empty := filepath.Join(t.TempDir(), "known_hosts")
	writeDoctorFile(t, empty, "")
	hostLines = fmt.Sprintf("host: %s\nssh:\n  identity: %s\n  known_hosts: %s\n  config: %s", srv.Target(), srv.ClientKey, empty, sshConfig)
	d = doctorCLI(t, "-c", doctorCampaign(t, hostLines, url))
	if d.code != ExitCannotRun || !strings.Contains(d.stdout, "fail  host      ") || !strings.Contains(d.stdout, "unknown host key") ||
		!strings.Contains(d.stdout, "fix: check the fingerprint") || d.doc.Fails != 1 {
		t.Errorf("unknown key: exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
	}
}

func TestDoctorHostUnreachable(t *testing.T) {
	dir := t.TempDir()
	sshConfig := filepath.Join(dir, "ssh_config")
	writeDoctorFile(t, sshConfig, "")
	camp := doctorCampaign(t, "host: nobody@127.0.0.1:1\nssh:\n  config: "+sshConfig, "http://127.0.0.1:8000")
	d := doctorCLI(t, "-c", camp)
	if d.code != ExitCannotRun || !strings.Contains(d.stdout, "fail  host") || !strings.Contains(d.stdout, "fix: check the host name") {
		t.Errorf("exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
	}
}

func TestDoctorBadInput(t *testing.T) {
	d := doctorCLI(t, "--bogus")
	if d.code != ExitBadInput {
		t.Errorf("--bogus: exit %d", d.code)
	}
	// A bad key in the file: one line naming it, before any host.
	dir := t.TempDir()
	camp := filepath.Join(dir, "profdeck.yaml")
	writeDoctorFile(t, camp, "host: sim\nmodel:\n  tp: -1\n")
	d = doctorCLI(t, "-c", camp)
	if d.code != ExitBadInput || !strings.Contains(d.stderr, "line 3: model.tp") || d.stdout != "" {
		t.Errorf("bad key: exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
	}
	// A flag that makes the campaign wrong: a fail line naming it.
	d = doctorCLI(t, "--host", "gpu 1")
	if d.code != ExitBadInput || !strings.Contains(d.stdout, "fail  campaign  --host") || d.doc.Fails != 1 {
		t.Errorf("bad --host: exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
	}
}

func writeDoctorFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
