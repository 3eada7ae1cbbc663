package macro_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
)

// startEmu serves an emulator on loopback for one test.
func startEmu(t testing.TB, cfg vllmemu.Config) (*vllmemu.Emulator, string) {
	t.Helper()
	return emutest.Start(t, cfg)
}

func runSweep(t testing.TB, cfg macro.Config) *macro.Result {
	t.Helper()
	s, err := macro.NewSweep(macro.Complete(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if d := (got - want) / want; d > tol || d < -tol {
		t.Errorf("%s = %.4f, want %.4f ±%.1f%% (off by %+.2f%%)", name, got, want, 100*tol, 100*d)
	} else {
		t.Logf("%s = %.4f (want %.4f, %+.3f%%)", name, got, want, 100*d)
	}
}

// TestMain doubles as the emulator server of the client benchmarks: with
// PROFDECK_EMU_CHILD set, the test binary serves an emulator on loopback
// (step time in the variable) until its stdin closes, so the benchmark's
// CPU figures are the client's alone.
func TestMain(m *testing.M) {
	if os.Getenv("PROFDECK_REC_CHILD") != "" {
		serveRecorder()
	}
	if step := os.Getenv("PROFDECK_EMU_CHILD"); step != "" {
		d, err := time.ParseDuration(step)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		// The emulator uses every core, whatever GOMAXPROCS the client
		// under test was given.
		runtime.GOMAXPROCS(runtime.NumCPU())
		// PROFDECK_EMU_COARSE: steps end up to a millisecond late rather
		// than spinning, so the emulator leaves the client its core.
		emu := vllmemu.New(vllmemu.Config{Model: "test/model", StepTime: d, StepPerSeq: 1, PrefillPerToken: 1, MaxNumSeqs: 100000,
			CoarseTiming: os.Getenv("PROFDECK_EMU_COARSE") != ""})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		go func() { _ = http.Serve(ln, emu) }()
		fmt.Println("http://" + ln.Addr().String())
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childEmu starts the emulator in a child process and returns its URL.
func childEmu(tb testing.TB, step time.Duration) string {
	tb.Helper()
	return childServer(tb, "emulator", "PROFDECK_EMU_CHILD="+step.String())
}

// childServer runs this test binary as a server (what env selects in
// TestMain) until the test ends, and returns the URL it prints.
func childServer(tb testing.TB, what, env string) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatalf("%s child: %v", what, err)
	}
	return strings.TrimSpace(line)
}

func bytesReader(b []byte) io.Reader { return strings.NewReader(string(b)) }
