package onhost_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// The profdeck binary, run as a user runs it (`profdeck sweep -c FILE`
// with macro.loadgen: host, to a real sshd): Ctrl-C after the first level
// exits 130 with the measured level written to --json, its path host, and
// nothing left running on the host.
func TestCLISweepOnHostCtrlC(t *testing.T) {
	exe := profdeckBinary(t)
	cache := t.TempDir()
	srv := sshtest.Start(t, sshtest.Options{Env: []string{"XDG_CACHE_HOME=" + cache}})
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 5 * time.Millisecond, StepPerSeq: 1})
	dir := t.TempDir()
	sshConfig := filepath.Join(dir, "ssh_config")
	os.WriteFile(sshConfig, nil, 0o600)
	camp := filepath.Join(dir, "profdeck.yaml")
	os.WriteFile(camp, []byte(fmt.Sprintf(`host: %s
ssh:
  identity: %s
  known_hosts: %s
  config: %s
server:
  url: %s
macro:
  loadgen: host
  concurrency: [1, 2]
  duration: 1s
  warmup: 0
  input_len: 8
  output_len: 16
`, srv.Target(), srv.ClientKey, srv.KnownHosts, sshConfig, url)), 0o600)
	out := filepath.Join(dir, "sweep.json")
	cmd := exec.Command(exe, "sweep", "-c", camp, "--json", out)
	cmd.Env = append(os.Environ(), "HOME="+dir, "SSH_AUTH_SOCK=")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	first := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "C=1 ") && !once {
				once = true
				close(first)
			}
		}
	}()
	select {
	case <-first:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no first level within 60 s:\n%s", log.String())
	}
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130:\n%s", err, log.String())
	}
	var res macro.Result
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("--json: %v\n%s", err, log.String())
	}
	if len(res.Levels) < 1 || res.Levels[0].Completed == 0 || res.Path == nil || res.Path.Kind != phases.PathHost {
		t.Fatalf("result: %s, path %+v\n%s", levelsOf(&res), res.Path, log.String())
	}
	if !strings.Contains(log.String(), "copied to") {
		t.Errorf("stderr does not say profdeck was copied:\n%s", log.String())
	}
	t.Logf("stderr:\n%s", log.String())
	bins, _ := filepath.Glob(cache + "/profdeck/*/profdeck")
	if len(bins) != 1 {
		t.Fatalf("the host's cache holds %v", bins)
	}
	noAgentLeft(t, bins[0])
}
