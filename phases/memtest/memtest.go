// Package memtest holds a piece of a test to a fixed memory limit: it runs
// the piece in a child process (the test binary itself, re-executed for that
// one test), kills the child when its resident memory passes the limit, and
// fails the test with the child's peak RSS (VmHWM from /proc). Parsers of
// outside input use it to show that a hostile file or a huge line costs a
// bounded amount of memory. It needs Linux's /proc; elsewhere the test is
// skipped, except under CI, where it fails.
package memtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

const envName = "PROFDECK_MEMTEST"

// Run runs work in a child process limited to limitMiB of resident memory
// and returns what work returned there. The child runs with GOMEMLIMIT at
// three quarters of the limit, as a deployment with a memory limit would.
func Run(t *testing.T, limitMiB int, work func() string) string {
	t.Helper()
	if os.Getenv(envName) == t.Name() {
		res := work()
		fmt.Printf("\nmemtest-result: %s\nmemtest-hwm-kib: %d\n", strconv.Quote(res), statusKiB(os.Getpid(), "VmHWM"))
		return res
	}
	if _, err := os.Stat("/proc/self/status"); err != nil || runtime.GOOS != "linux" {
		if os.Getenv("CI") != "" {
			t.Fatalf("memtest needs /proc (Linux): %v", err)
		}
		t.Skip("memtest needs /proc (Linux)")
	}
	res, hwm, err := runChild(t, limitMiB)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS %.1f MiB (limit %d MiB)", float64(hwm)/1024, limitMiB)
	if hwm > int64(limitMiB)<<10 {
		t.Fatalf("peak RSS %.1f MiB, over the limit of %d MiB", float64(hwm)/1024, limitMiB)
	}
	return res
}

func runChild(t *testing.T, limitMiB int) (string, int64, error) {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envName+"="+t.Name(), fmt.Sprintf("GOMEMLIMIT=%dMiB", limitMiB*3/4))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return parseChild(out.String(), peak, err)
		case <-tick.C:
			rss := statusKiB(cmd.Process.Pid, "VmRSS")
			peak = max(peak, rss)
			if rss > int64(limitMiB)<<10 {
				_ = cmd.Process.Kill()
				<-done
				return "", rss, fmt.Errorf("killed at %.1f MiB of RSS, over the limit of %d MiB", float64(rss)/1024, limitMiB)
			}
		}
	}
}

func parseChild(out string, peak int64, werr error) (string, int64, error) {
	var res string
	hwm := int64(-1)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if v, ok := strings.CutPrefix(l, "memtest-result: "); ok {
			res, _ = strconv.Unquote(v)
		}
		if v, ok := strings.CutPrefix(l, "memtest-hwm-kib: "); ok {
			hwm, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if werr != nil || hwm < 0 {
		tail := out
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return "", peak, fmt.Errorf("child failed (%v):\n%s", werr, tail)
	}
	return res, max(hwm, peak), nil
}

// statusKiB reads one "Name: N kB" field of /proc/PID/status (0 when absent).
func statusKiB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
