package ui_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// The planted secrets: a password and a token in URLs, an API key, tokens
// in the launch command and the server's environment, and a value of the
// environment whose name does not look secret.
const (
	plantPassword = "PlantedPw7731"
	plantURLToken = "PlantedUrlTok4410"
	plantAPIKey   = "PlantedKey5526"
	plantTokenEnv = "PlantedTok8803"
	plantTokenArg = "PlantedTok2290"
	plantPlainEnv = "PlantedPlain3318"
)

var planted = []string{plantPassword, plantURLToken, plantAPIKey, plantTokenEnv, plantTokenArg, plantPlainEnv}

const secretsCampaign = `name: secrets
notebook: nb.md
host: sim
sim:
  load_time: 3s
  profiler_flush: 200ms
server:
  url: http://bench:` + plantPassword + `@127.0.0.1:8000
  metrics_url: http://` + plantURLToken + `@127.0.0.1:8000/metrics
  api_key_env: PD_PLANTED_KEY
  launch: vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --api-key ` + plantAPIKey + ` --hf-token ` + plantTokenArg + ` --port 8000
  log: /var/log/vllm/server.log
  env:
    HF_TOKEN: ` + plantTokenEnv + `
    PD_CACHE_DIR: ` + plantPlainEnv + `
  profiler_dir: /tmp/vllm_profile
model:
  name: moonshotai/Kimi-K2.5
  preset: kimi-k2.5
  tp: 8
  expect_gib: 74.9
macro:
  concurrency: [1, 2]
  requests: 4
  warmup: 1
  input_len: 32
  output_len: 8
micro:
  batch: [1]
nccl:
  batch: [1]
profile:
  requests: 2
`

// outputs collects everything profdeck shows or writes, by name.
type outputs map[string]string

// runBin runs the binary in dir and keeps its stdout and stderr.
func (o outputs) runBin(t *testing.T, bin, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PD_PLANTED_KEY="+plantAPIKey, "NO_COLOR=1")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Errorf("%s did not end in 3 minutes", name)
	}
	o[name+" stdout"], o[name+" stderr"] = so.String(), se.String()
}

// Every output of profdeck — stdout, stderr, JSON, JSONL, the journal, the
// notebook, its charts and the cockpit's screens — is searched for the
// planted password, API key and tokens: none may appear, while the URL they
// were given in is shown (masked) and the requests went through.
func TestPlantedSecretsReachNoOutput(t *testing.T) {
	needTmux(t)
	t.Parallel() // beside the other long end-to-end tests: it waits on the screen, it times nothing
	bin := buildBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(secretsCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	out := outputs{}

	// A whole campaign: journal, notebook, charts, --json and --jsonl.
	out.runBin(t, bin, dir, "run", "run", "-c", "c.yaml", "--json", "run.json", "--jsonl", "run.jsonl")
	// A headless sweep against a real loopback server that wants the key.
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", APIKey: plantAPIKey})
	srv := httptest.NewServer(emu)
	defer func() { srv.Close(); emu.Close() }()
	withCreds := strings.Replace(srv.URL, "http://", "http://bench:"+plantPassword+"@", 1)
	out.runBin(t, bin, dir, "sweep", "sweep", "--url", withCreds, "--api-key", plantAPIKey, "--concurrency", "1", "--requests", "2",
		"--warmup", "0", "--input-len", "8", "--output-len", "4", "--metrics-url", "http://"+plantURLToken+"@"+strings.TrimPrefix(srv.URL, "http://")+"/metrics",
		"--json", "sweep.json", "--jsonl", "sweep.jsonl")
	out.runBin(t, bin, dir, "sweep refused", "sweep", "--url", "http://bench:"+plantPassword+"@127.0.0.1:1", "--concurrency", "1", "--requests", "2")
	out.runBin(t, bin, dir, "sweep bad url", "sweep", "--url", "ftp://bench:"+plantPassword+"@host", "--concurrency", "1")
	out.runBin(t, bin, dir, "load", "load", "-c", "c.yaml", "--json", "load.json")
	echoedKeyAndServing(t, out, bin, dir)
	out.runBin(t, bin, dir, "profile", "profile", "-c", "c.yaml", "--json", "profile.json")
	out.runBin(t, bin, dir, "report", "report", "nb.journal.jsonl", "-o", "report.md")
	out.runBin(t, bin, dir, "compare", "compare", "nb.journal.jsonl", "sweep.json")

	// The cockpit's screens while the server loads, a sweep runs and a
	// profile is taken.
	s := startTmux(t, 120, 40, fmt.Sprintf("cd %s && PD_PLANTED_KEY=%s NO_COLOR=1 %s tui -c c.yaml", dir, plantAPIKey, bin))
	s.waitFor(regexp.MustCompile(`Server/Load`), 20*time.Second)
	s.keys("1", "s")
	out["screen load"] = s.waitFor(regexp.MustCompile(`answered 200`), 60*time.Second)
	s.keys("2", "s")
	out["screen macro"] = s.waitFor(regexp.MustCompile(`[1-9] levels? done`), 60*time.Second)
	s.keys("5")
	out["screen profile"] = s.capture()
	s.keys("6")
	out["screen notes"] = s.capture()
	s.keys("1")
	out["screen load again"] = s.capture()
	s.keys("q")
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(s.capture(), "Quit anyway") {
		s.keys("y")
	}
	s.waitFor(regexp.MustCompile(`\[exited`), 20*time.Second)

	// Every file written under the directory, the campaign files aside.
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(p) == "c.yaml" || filepath.Base(p) == "serving.yaml" || strings.HasSuffix(p, ".sock") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out["file "+rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"file nb.journal.jsonl", "file nb.md", "file run.json", "file run.jsonl", "file sweep.json",
		"file sweep.jsonl", "file load.json", "file profile.json", "file report.md", "file sweep401.json", "file sweep401.jsonl",
		"file serving.json", "file serving.journal.jsonl"} {
		if out[want] == "" {
			t.Errorf("%s is missing or empty", want)
		}
	}
	charts := 0
	for name := range out {
		if strings.HasPrefix(name, "file nb.charts/") {
			charts++
		}
	}
	if charts == 0 {
		t.Error("no chart was written")
	}
	for name, text := range out {
		for _, sec := range planted {
			if i := strings.Index(text, sec); i >= 0 {
				t.Errorf("%s holds the planted secret %s: …%s…", name, sec, text[max(0, i-80):min(len(text), i+40)])
			}
		}
	}
	// The secrets were given where they matter: the URL shows, masked,
	// and the key-protected server answered.
	if !strings.Contains(out["file nb.journal.jsonl"], "xxxxx@127.0.0.1:8000") {
		t.Error("the journal never shows the server URL (masked)")
	}
	if !strings.Contains(out["file sweep.json"], `"completed": 2`) {
		t.Errorf("the sweep with the API key did not complete its requests:\n%s", out["sweep stderr"])
	}
}

// echoedKeyAndServing adds two runs against real loopback servers: a sweep
// whose server refuses the key and echoes it in its 401 body (kept in the
// failure examples, on stderr and in --jsonl), and a campaign run that
// finds the server already up behind a URL with a password (its steps
// table and reasons).
func echoedKeyAndServing(t *testing.T, out outputs, bin, dir string) {
	t.Helper()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data": [{"id": "m", "max_model_len": 4096}]}`)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error": "invalid API key %s"}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer echo.Close()
	out.runBin(t, bin, dir, "sweep 401", "sweep", "--url", echo.URL, "--api-key", plantAPIKey, "--model", "m", "--no-preflight",
		"--concurrency", "1", "--requests", "2", "--warmup", "0", "--input-len", "8", "--output-len", "4",
		"--json", "sweep401.json", "--jsonl", "sweep401.jsonl")
	if !strings.Contains(readFile(dir, "sweep401.json"), "invalid API key") {
		t.Errorf("the 401 body was not kept:\n%s", out["sweep 401 stderr"])
	}
	emu := vllmemu.New(vllmemu.Config{Model: "test/model"})
	up := httptest.NewServer(emu)
	defer func() { up.Close(); emu.Close() }()
	c := fmt.Sprintf("name: serving\nnotebook: serving.md\nhost: local\nserver:\n  url: %s\n  launch: vllm serve test/model\n  log: %s\nmodel:\n  name: test/model\n  preset: kimi-k2.5\n  tp: 8\n",
		strings.Replace(up.URL, "http://", "http://alice:"+plantPassword+"@", 1), filepath.Join(dir, "serving.log"))
	if err := os.WriteFile(filepath.Join(dir, "serving.yaml"), []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	out.runBin(t, bin, dir, "run serving", "run", "-c", "serving.yaml", "--phases", "load", "--json", "serving.json")
	if !strings.Contains(out["run serving stdout"]+out["run serving stderr"], "already serving") {
		t.Errorf("the run did not find the server up:\n%s\n%s", out["run serving stdout"], out["run serving stderr"])
	}
}

func readFile(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b)
}
