package sshtest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// FreePort is a TCP port free on 127.0.0.1 now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshtest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitFor polls cond every 20 ms until it holds, failing the test after d
// with what it waited for.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// AppendLines appends lines (each ended by a newline) to the file at path,
// creating it when missing.
func AppendLines(t testing.TB, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// DialBare logs in with the client key and runs nothing on the connection,
// as `ssh -N` does (sshd's side stays Nagled); it is closed when the test
// ends.
func (s *Server) DialBare(t testing.TB) *gossh.Client {
	t.Helper()
	key, err := os.ReadFile(s.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := gossh.Dial("tcp", s.Addr(), &gossh.ClientConfig{User: s.User, Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.FixedHostKey(s.HostKey), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TreeCPU is the CPU time of the server and every process under it,
// including those they have reaped: the connections' sshd processes and
// the commands their sessions ran (a load generator on the host, say).
// Benchmarks take it before and after to count the host side's cost.
func (s *Server) TreeCPU(tb testing.TB) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(s.Dir, "sshd.pid"))
	if err != nil {
		tb.Fatal(err)
	}
	root, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	parent, ticks := map[int]int{}, map[int]int64{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the command's closing parenthesis: state ppid … utime
		// (14th field of the line) stime cutime cstime.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) < 15 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		for _, i := range []int{11, 12, 13, 14} {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks[pid] += v
		}
	}
	var sum int64
	for pid := range ticks {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				sum += ticks[pid]
				break
			}
		}
	}
	return time.Duration(sum) * time.Second / 100 // USER_HZ
}
