package diagnose

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/local"
)

// The helper processes of the local test: run as this test binary with
// DIAG_HELPER set.
func TestMain(m *testing.M) {
	switch os.Getenv("DIAG_HELPER") {
	case "read-then-block":
		readThenBlock(os.Getenv("DIAG_FILE"))
	case "spin":
		spin()
	}
	os.Exit(m.Run())
}

// readThenBlock reads a file slowly, 64 KiB every 20 ms, then blocks on a
// pipe nobody writes: a load whose weights I/O stopped.
func readThenBlock(name string) {
	f, err := os.Open(name)
	if err != nil {
		os.Exit(3)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Read(buf); err == io.EOF {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	os.Stdout.WriteString("blocked\n")
	r, _, _ := os.Pipe()
	_, _ = r.Read(buf) // never returns
	os.Exit(0)
}

// spin burns CPU on every core without reading anything (on a busy
// machine one thread alone may get little of a core).
func spin() {
	os.Stdout.WriteString("spinning\n")
	for i := 1; i < runtime.NumCPU(); i++ {
		go func() {
			for x := 0; ; x++ {
			}
		}()
	}
	for x := 0; ; x++ {
	}
}

// helper starts this binary as a helper and waits for its first line.
func helper(t *testing.T, kind string, env ...string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "DIAG_HELPER="+kind), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := out.Read(b)
		line <- string(b[:n])
	}()
	select {
	case l := <-line:
		if l == "" {
			t.Fatalf("helper %s said nothing", kind)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("helper %s did not start", kind)
	}
	return cmd.Process.Pid
}

// A real process that read a file and then blocks is "weights I/O
// stopped", with what it read before; one spinning on the CPU is "busy on
// the CPU". Both are sampled through the local host's /proc.
func TestLocalProcessesDiagnosed(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/PID/io on this system")
	}
	file := filepath.Join(t.TempDir(), "weights.bin")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := local.New()

	blocked := helper(t, "read-then-block", "DIAG_FILE="+file)
	d, err := Diagnose(ctx, Config{Host: h, PIDs: []int{blocked}, Window: 2 * time.Second, Stalled: 5 * time.Minute, Trigger: "stall"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("blocked: %s %+v", d.Verdict, d.Procs)
	if !strings.HasPrefix(d.Verdict, "weights I/O stopped (0 B/s for 5 min") || len(d.Procs) != 1 || d.Procs[0].State != "S" {
		t.Errorf("blocked reader: verdict %q, procs %+v", d.Verdict, d.Procs)
	}
	if !strings.Contains(strings.Join(d.Why, "\n"), "MiB read before it stopped") {
		t.Errorf("why %q lacks what was read before", d.Why)
	}

	spinner := helper(t, "spin")
	d, err = Diagnose(ctx, Config{Host: h, PIDs: []int{spinner}, Window: 2 * time.Second, Trigger: "request"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spinner: %s %+v", d.Verdict, d.Procs)
	if !strings.HasPrefix(d.Verdict, "busy on the CPU (pid ") || d.Procs[0].CPUPct < hotCPUPct {
		t.Errorf("spinner: verdict %q, procs %+v", d.Verdict, d.Procs)
	}

	// Gone: a pid that no longer exists.
	d, err = Diagnose(ctx, Config{Host: h, PIDs: []int{blocked + 1<<22}, Window: 100 * time.Millisecond, Trigger: "request"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != "server process gone" {
		t.Errorf("gone: verdict %q", d.Verdict)
	}
}
