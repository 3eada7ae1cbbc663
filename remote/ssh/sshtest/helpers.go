package sshtest

import (
	"net"
	"os"
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
