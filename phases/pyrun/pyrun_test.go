package pyrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
)

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		typ  string
		want bool
	}{
		{`{"type":"gemm","name":"o_proj","us":10.5}`, "gemm", true},
		{`  {"type":"env","gpu":"NVIDIA H200"}  `, "env", true},
		{`{"type":"gemm","name":"o_pr`, "", false}, // cut short when the script died
		{`{"name":"no type"}`, "", false},
		{`{"type":7}`, "", false},
		{`/opt/torch/lib/graphs.py:126: UserWarning: The CUDA Graph is empty.`, "", false},
		{``, "", false},
		{`[1, 2]`, "", false},
	} {
		l, ok := ParseLine(c.in)
		if ok != c.want || l.Type != c.typ {
			t.Errorf("ParseLine(%q) = %q %v, want %q %v", c.in, l.Type, ok, c.typ, c.want)
		}
	}
}

func TestParseComputeApps(t *testing.T) {
	out := "12345, VLLM::Worker_TP0, 75832\n12346, VLLM::Worker_TP1, 75832\n\nNo running processes found\n777, [Not Found], 4500\n"
	p := ParseComputeApps(out)
	if len(p) != 3 || p[0].PID != 12345 || p[0].Name != "VLLM::Worker_TP0" || p[0].UsedMiB != 75832 || p[2].Name != "[Not Found]" {
		t.Fatalf("%+v", p)
	}
	err := &BusyError{Procs: p}
	for _, want := range []string{"3 process(es)", "152.5 GiB", "VLLM::Worker_TP0", "Load phase", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err.Error(), want)
		}
	}
	if ParseComputeApps("") != nil {
		t.Error("empty output gave processes")
	}
}

func TestScriptNameIsContentAddressed(t *testing.T) {
	a := ScriptName("micro", []byte("print(1)"), ".py")
	b := ScriptName("micro", []byte("print(2)"), ".py")
	if a == b || !strings.HasPrefix(a, "profdeck-micro-") || !strings.HasSuffix(a, ".py") || len(a) != len("profdeck-micro-")+12+3 {
		t.Errorf("%s %s", a, b)
	}
	if a != ScriptName("micro", []byte("print(1)"), ".py") {
		t.Error("not stable")
	}
}

func TestKillCommandQuotesTheProgram(t *testing.T) {
	c := KillCommand("docker exec vllm python3", Start{PID: 42, PPID: 7}, true)
	if !strings.HasPrefix(c, "docker exec vllm python3 -c '") || !strings.Contains(c, "ps=[42]") || !strings.Contains(c, "if True and") {
		t.Errorf("%s", c)
	}
	if c := KillCommand("python3", Start{PID: 42, PPID: 1}, true); !strings.Contains(c, "if False and") {
		t.Errorf("init as parent must never be signalled: %s", c)
	}
	if got := ExecPrefix("docker exec -i vllm torchrun", "python3"); got != "docker exec -i vllm python3" {
		t.Errorf("ExecPrefix: %s", got)
	}
	if got := ExecPrefix("torchrun", "python3"); got != "python3" {
		t.Errorf("ExecPrefix: %s", got)
	}
}

// TestRunOnLocalHost runs a stand-in script through the real local host:
// JSON lines are delivered, other output goes to OnText, and a fatal line
// becomes the error.
func TestRunOnLocalHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	h := local.New()
	script := "echo '{\"type\":\"start\",\"pid\":1,\"ppid\":0}'\necho 'warming up' >&2\necho '{\"type\":\"progress\",\"done\":1,\"total\":2}'\n" +
		"echo '{\"type\":\"fatal\",\"error\":\"RuntimeError: CUDA out of memory\"}'\nexit 1\n"
	p, err := Upload(ctx, h, filepath.Join(dir, "work"), "fake", []byte(script), ".sh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("upload: %v", err)
	}
	var types, texts []string
	err = Run(ctx, Spec{Host: h, Cmd: "sh " + remote.Quote(p),
		OnLine: func(l Line) { types = append(types, l.Type) },
		OnText: func(l remote.Line) { texts = append(texts, l.Text) }})
	if err == nil || !strings.Contains(err.Error(), "CUDA out of memory") {
		t.Errorf("error %v", err)
	}
	if strings.Join(types, ",") != "start,progress,fatal" || strings.Join(texts, ",") != "warming up" {
		t.Errorf("types %v texts %v", types, texts)
	}
}

func TestRunCancelStopsTheScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "killed")
	// The stop command is run through a "prefix" that records its call.
	kill := "sh -c 'touch " + marker + "' sh"
	run, stop := context.WithCancel(ctx)
	started := make(chan struct{})
	var once bool
	go func() {
		<-started
		stop()
	}()
	err := Run(run, Spec{Host: local.New(), KillPrefix: kill,
		Cmd: `echo '{"type":"start","pid":999999,"ppid":1}'; sleep 30`,
		OnLine: func(l Line) {
			if l.Type == "start" && !once {
				once = true
				close(started)
			}
		}})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the stop command did not run: %v", err)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{`{"type":"gemm","us":1}`, `{"type":""}`, `{`, `{"type":"x"`, "{\"type\":\"a\"}\x00", `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, ok := ParseLine(s)
		if ok && l.Type == "" {
			t.Fatal("ok with no type")
		}
		_ = ParseComputeApps(s)
	})
}
