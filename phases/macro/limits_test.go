//go:build unix

package macro_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/memtest"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// --output-len 1 is refused as the campaign refuses it (TPOT needs two
// tokens), and a prompt past the cap is refused before any is built.
func TestLengthsRefused(t *testing.T) {
	_, err := macro.NewSweep(macro.Complete(macro.Config{URL: "http://127.0.0.1:1", OutputLen: 1}))
	if err == nil || !strings.Contains(err.Error(), "OutputLen 1: must be at least 2 so that TPOT is defined") {
		t.Fatalf("output-len 1: %v", err)
	}
	_, err = macro.NewSweep(macro.Complete(macro.Config{URL: "http://127.0.0.1:1", InputLen: 99999999}))
	if err == nil || !strings.Contains(err.Error(), "InputLen 99999999: at most 1048576 tokens") {
		t.Fatalf("input-len 99999999: %v", err)
	}
}

// A prompt and output longer than the server's max_model_len is refused
// with the reason, before a prompt is built or a request sent; the sweep
// holds little memory doing so (it used to build a 3.6 GB prompt).
func TestInputLenOverMaxModelLen(t *testing.T) {
	got := memtest.Run(t, 256, func() string {
		emu, url := startEmu(t, vllmemu.Config{MaxModelLen: 4096})
		sw, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, InputLen: 1000000, OutputLen: 16, Concurrency: []int{1}, Requests: 1}))
		if err != nil {
			return "NewSweep: " + err.Error()
		}
		_, err = sw.Run(context.Background(), nil)
		var ie *phases.InputError
		return fmt.Sprintf("input-error=%v prompt-tokens=%d %v", errors.As(err, &ie), emu.State().PromptTokens, err)
	})
	if !strings.Contains(got, "input-error=true prompt-tokens=0") ||
		!strings.Contains(got, "input 1000000 + output 16 = 1000016 tokens, more than test/model's max_model_len of 4096") {
		t.Fatalf("got %s", got)
	}
}

// A concurrency the open-file limit cannot hold is refused before the
// first level, after the soft limit is raised to the hard one.
func TestConcurrencyOverFDLimit(t *testing.T) {
	got := memtest.Run(t, 256, func() string {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 200, Max: 300}); err != nil {
			return "setrlimit: " + err.Error()
		}
		emu, url := startEmu(t, vllmemu.Config{})
		sw, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{1, 1000}, Requests: 1, InputLen: 8, OutputLen: 4}))
		if err != nil {
			return err.Error()
		}
		_, err = sw.Run(context.Background(), nil)
		var l syscall.Rlimit
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
		var ie *phases.InputError
		return fmt.Sprintf("input-error=%v soft=%d prompt-tokens=%d %v", errors.As(err, &ie), l.Cur, emu.State().PromptTokens, err)
	})
	if !strings.Contains(got, "input-error=true soft=300 prompt-tokens=0") ||
		!strings.Contains(got, "--concurrency 1000 needs about 1064 open files (one socket per request in flight), but this process may open 300 (ulimit -n; hard limit 300)") {
		t.Fatalf("got %s", got)
	}
}

// A connection this machine cannot open (out of file descriptors) is the
// client's failure, client_error, never the server's connect_error.
func TestClientLimitIsClientError(t *testing.T) {
	_, url := startEmu(t, vllmemu.Config{})
	var dials atomic.Int32
	d := &net.Dialer{Timeout: 5 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) > 1 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", syscall.EMFILE)}
		}
		return d.DialContext(ctx, network, addr)
	}
	res := runSweep(t, macro.Config{URL: url, Dial: dial, Concurrency: []int{4}, Requests: 8, InputLen: 8, OutputLen: 4})
	l := res.Levels[0]
	if l.Failures[macro.FailClient] == 0 || l.Failures[macro.FailConnect] != 0 {
		t.Fatalf("failures %v: want client_error for the client's own limit, no connect_error", l.Failures)
	}
}

// Raising the concurrency live stops at what the open-file limit allows.
func TestSetConcurrencyStopsAtFDLimit(t *testing.T) {
	sw, err := macro.NewSweep(macro.Complete(macro.Config{URL: "http://127.0.0.1:1", Concurrency: []int{1}}))
	if err != nil {
		t.Fatal(err)
	}
	sw.SetConcurrency(1 << 30)
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	if got := sw.Concurrency(); got < 1 || uint64(got)+64 > l.Cur {
		t.Fatalf("concurrency %d with an open-file limit of %d", got, l.Cur)
	}
}
