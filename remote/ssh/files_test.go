package ssh

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

func testWriteFile(t *testing.T, srv *sshtest.Server, cfg string, wantSFTP bool) {
	h := dialTest(t, srv, fastOpts(srv, cfg))
	ctx := testCtx(t, 10*time.Second)
	path := filepath.Join(t.TempDir(), "new dir", "bench 'x'.py")
	data := []byte("print('hi')\n" + strings.Repeat("#", 200<<10) + "\n")
	if err := h.WriteFile(ctx, path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	c, _ := h.conn(ctx)
	if usedSFTP := c.sftpClient() != nil; usedSFTP != wantSFTP {
		t.Errorf("upload used sftp: %v, want %v", usedSFTP, wantSFTP)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(data) {
		t.Fatalf("uploaded %d bytes, read back %d (%v)", len(data), len(got), err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	// Replacing leaves no temporary file behind.
	if err := h.WriteFile(ctx, path, []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries after replace", len(ents))
	}
	if b, _ := h.ReadFile(ctx, path); string(b) != "v2\n" {
		t.Errorf("after replace: %q", b)
	}
	// A path the user cannot write names the path.
	if err := h.WriteFile(ctx, "/proc/nope/x", []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "/proc/nope/x") {
		t.Errorf("bad path: %v", err)
	}
}

func TestWriteFileSFTP(t *testing.T) {
	_, cfg := isolate(t)
	testWriteFile(t, sshtest.Start(t, sshtest.Options{}), cfg, true)
}

func TestWriteFileWithoutSFTP(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{NoSFTP: true})
	testWriteFile(t, srv, cfg, false)
}

// TestDialContextReachesHostLocalhost: a server on the host's loopback is
// reached through the SSH connection (direct-tcpip).
func TestDialContextReachesHostLocalhost(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running 3\n")
	}))
	defer web.Close()
	client := &http.Client{Transport: &http.Transport{DialContext: h.DialContext}, Timeout: 5 * time.Second}
	resp, err := client.Get(web.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if line != "vllm:num_requests_running 3\n" {
		t.Fatalf("got %q", line)
	}
	// A closed port is an error naming the address.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if _, err := h.DialContext(testCtx(t, 3*time.Second), "tcp", addr); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("closed port: %v", err)
	}
}
