package campaign

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestInitWritesAFileThatLoads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "campaigns", "k25.yaml")
	if err := WriteExample(path, false); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "sim" || c.Notebook != filepath.Join(dir, "campaigns", "k25-h200-tp8.md") ||
		c.Model.Preset != "kimi-k2.5" || c.Model.TP != 8 || c.Model.ExpectGiB != 74.9 ||
		c.Server.Log != "/var/log/vllm/server.log" || c.Server.Env["VLLM_USE_DEEP_GEMM"] != "1" ||
		len(c.Macro.Concurrency) != 9 || c.Load.StallAfter.Duration != 5*time.Minute || c.Path != path {
		t.Fatalf("unexpected campaign: %+v", c)
	}
	if c.Server.Launch != "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --trust-remote-code --max-model-len 262144 --gpu-memory-utilization 0.90 --port 8000" {
		t.Fatalf("launch %q", c.Server.Launch)
	}
	if c.JournalPath() != filepath.Join(dir, "campaigns", "k25-h200-tp8.journal.jsonl") {
		t.Fatalf("journal %q", c.JournalPath())
	}
	// Every section of the campaign appears in the example, commented.
	for _, section := range []string{"name:", "notebook:", "# journal:", "host: sim", "#   host: gpu1", "ssh:", "server:",
		"launch:", "log:", "# container:", "model:", "load:", "macro:", "micro:", "nccl:", "profile:"} {
		if !bytes.Contains(Example, []byte(section)) {
			t.Errorf("the example lacks %q", section)
		}
	}
	// It is the text written.
	b, _ := os.ReadFile(path)
	if !bytes.Equal(b, Example) {
		t.Fatal("written file differs from the example")
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile(DefaultPath, []byte("host: local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteExample(DefaultPath, false); err == nil || !strings.Contains(err.Error(), "already exists") ||
		!strings.Contains(err.Error(), "--force") {
		t.Fatalf("init over a file: %v", err)
	}
	if b, _ := os.ReadFile(DefaultPath); string(b) != "host: local\n" {
		t.Fatal("the existing file was changed")
	}
	if err := WriteExample(DefaultPath, true); err != nil {
		t.Fatalf("init --force: %v", err)
	}
	if b, _ := os.ReadFile(DefaultPath); !bytes.Equal(b, Example) {
		t.Fatal("--force did not replace the file")
	}
	ents, _ := os.ReadDir(".")
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestErrorsNameKeyAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top-level key", "name: x\nhots: sim\n", []string{"line 2", "hots", "unknown key"}},
		{"unknown nested key", "macro:\n  api: chat\n  concurency: [1, 2]\n", []string{"line 3", "macro.concurency", "concurrency"}},
		{"bad duration", "load:\n  stall_after: 5 minutes\n", []string{"line 2", "load.stall_after", "5 minutes"}},
		{"negative duration", "macro:\n  duration: -5s\n", []string{"line 2", "macro.duration"}},
		{"negative number", "macro:\n  requests: -3\n", []string{"line 2", "macro.requests", "-3"}},
		{"negative gib", "model:\n  expect_gib: -1\n", []string{"line 2", "model.expect_gib"}},
		{"bad URL", "server:\n  url: localhost:8000\n", []string{"line 2", "server.url", "localhost:8000"}},
		{"bad metrics URL", "server:\n  metrics_url: ftp://x/metrics\n", []string{"line 2", "server.metrics_url"}},
		{"wrong type", "model:\n  name: m\n  tp: eight\n", []string{"line 3", "model.tp", "eight"}},
		{"zero level", "macro:\n  concurrency: [1, 0]\n", []string{"line 2", "macro.concurrency"}},
		{"bad preset", "model:\n  preset: kimi-k3\n", []string{"line 2", "model.preset", "kimi-k2.5"}},
		{"tpot undefined", "macro:\n  output_len: 1\n", []string{"line 2", "macro.output_len"}},
		{"bad api", "\n\nmacro:\n  api: grpc\n", []string{"line 4", "macro.api", "grpc"}},
		{"host with space", "host: gpu 1\n", []string{"line 1", "host"}},
		{"duplicate key", "host: sim\nhost: local\n", []string{"line 2", "host"}},
		{"section as scalar", "macro: fast\n", []string{"line 1", "macro"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// LoadFile names the file too.
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("macro:\n  requests: -3\n"), 0o644)
	if _, err := LoadFile(p); err == nil || !strings.HasPrefix(err.Error(), p+": line 2: macro.requests") {
		t.Fatalf("LoadFile: %v", err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestEmptyFileIsDefaults(t *testing.T) {
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Defaults()
	if c.Host != d.Host || c.Macro.Requests != d.Macro.Requests || c.Server.URL != d.Server.URL {
		t.Fatalf("%+v", c)
	}
}

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	c := Demo(dir)
	if c.Host != "sim" || c.Notebook != filepath.Join(dir, "profdeck-demo.md") || c.Server.URL != "http://127.0.0.1:8000" ||
		!strings.HasPrefix(c.Server.Launch, "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8") ||
		c.Server.Log != "/var/log/vllm/server.log" || c.Model.Preset != "kimi-k2.5" || c.Model.TP != 8 || c.Model.ExpectGiB != 74.9 ||
		c.Macro.Concurrency[0] != 1 || c.Macro.Concurrency[len(c.Macro.Concurrency)-1] != 256 {
		t.Fatalf("%+v", c)
	}
	// The demo campaign is a valid campaign: it survives a round trip
	// through the file format.
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("the demo campaign does not validate: %v\n%s", err, b)
	}
	if back.Macro.Duration != c.Macro.Duration || back.Load.StallAfter != c.Load.StallAfter || back.Notebook != c.Notebook {
		t.Fatalf("round trip changed it: %+v", back)
	}
}

func TestKeyAt(t *testing.T) {
	var root yaml.Node
	src := "host: sim\nmacro:\n  concurrency:\n    - 1\n    - 2\n  api: chat\nserver:\n  env:\n    A: b\n"
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		t.Fatal(err)
	}
	for line, want := range map[int]string{1: "host", 2: "macro", 3: "macro.concurrency", 5: "macro.concurrency", 6: "macro.api", 9: "server.env.A", 42: ""} {
		if got := keyAt(&root, line); got != want {
			t.Errorf("line %d: %q, want %q", line, got, want)
		}
	}
}

// FuzzParse: any text gives a campaign or an error, never a panic, and an
// accepted campaign is valid.
func FuzzParse(f *testing.F) {
	f.Add(Example)
	f.Add([]byte("host: sim\nmacro:\n  concurrency: [1, 0]\n"))
	f.Add([]byte("load:\n  stall_after: 5 minutes\n"))
	f.Add([]byte("macro: [\n"))
	f.Add([]byte("server:\n  env:\n    A: [1]\n"))
	f.Add([]byte("&a x: *a\n"))
	// Fractions and quoted numbers where whole numbers are wanted.
	f.Add([]byte("model:\n  tp: 8.5\nmacro:\n  concurrency: [1.5, 2.7]\n  requests: 4.9\n"))
	f.Add([]byte("model:\n  tp: \"8\"\n  expect_gib: '74.9'\n"))
	f.Add([]byte("model:\n  tp: 1e3\nmacro:\n  concurrency: [0x10, -1, .inf]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			if c != nil {
				t.Fatal("a campaign with an error")
			}
			return
		}
		if c.Host == "" || c.Model.TP < 1 {
			t.Fatalf("accepted an invalid campaign: %+v", c)
		}
	})
}

func TestDurationReplacesDefaultCount(t *testing.T) {
	c, err := Parse([]byte("macro:\n  duration: 2m\n"))
	if err != nil || c.Macro.Requests != 0 || c.Macro.Duration.Duration != 2*time.Minute {
		t.Fatalf("%+v %v", c.Macro, err)
	}
	c, err = Parse([]byte("macro:\n  duration: 2m\n  requests: 500\n"))
	if err != nil || c.Macro.Requests != 500 {
		t.Fatalf("%+v %v", c.Macro, err)
	}
}

// A fraction where a whole number is wanted is an error naming the key and
// its line (it used to become 8, 7, [1, 2], 4); a quoted number says it is
// text and wants a number.
func TestCampaignNumbersNotTruncated(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"model:\n  tp: 8.5\n", "line 2: model.tp: 8.5 is not a whole number"},
		{"model:\n  name: x\n  tp: 7.9\n", "line 3: model.tp: 7.9 is not a whole number"},
		{"macro:\n  concurrency: [1.5, 2.7]\n", "line 2: macro.concurrency: 1.5 is not a whole number"},
		{"macro:\n  concurrency:\n    - 1\n    - 2.7\n", "line 4: macro.concurrency: 2.7 is not a whole number"},
		{"macro:\n  requests: 4.9\n", "line 2: macro.requests: 4.9 is not a whole number"},
		{"model:\n  tp: \"8\"\n", `line 2: model.tp: "8" is quoted, so it is text; want a whole number (write 8 without quotes)`},
		{"model:\n  expect_gib: '74.9'\n", `line 2: model.expect_gib: "74.9" is quoted, so it is text; want a number`},
		{"model:\n  tp: \"eight\"\n", `line 2: model.tp: "eight" is text; want a whole number`},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
	c, err := Parse([]byte("model:\n  tp: 8\n  expect_gib: 74\nmacro:\n  concurrency: [1, 2]\n"))
	if err != nil || c.Model.TP != 8 || c.Model.ExpectGiB != 74 || len(c.Macro.Concurrency) != 2 {
		t.Fatalf("whole numbers: %v %+v", err, c)
	}
}

// A file far larger than any campaign is refused before it is parsed.
func TestLoadFileTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte("name: x\n# "+strings.Repeat("x", MaxFile)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(p); err == nil || !strings.Contains(err.Error(), "over 1024 KiB: not a campaign file") {
		t.Fatalf("err %v", err)
	}
}
