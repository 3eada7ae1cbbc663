package ssh

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

func dialErr(t *testing.T, srv *sshtest.Server, opt Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Dial(ctx, srv.Target(), opt)
	if err == nil {
		h.Close()
	}
	return err
}

func TestHostKeyUnknownRefusedHeadless(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	opt := fastOpts(srv, cfg)
	opt.KnownHosts = filepath.Join(home, "known_hosts") // does not exist yet
	err := dialErr(t, srv, opt)
	var hke *HostKeyError
	if !errors.As(err, &hke) || hke.Changed {
		t.Fatalf("want an unknown host key error, got %v", err)
	}
	fp := gossh.FingerprintSHA256(srv.HostKey)
	for _, want := range []string{"ssh " + srv.Addr() + ": ", "unknown host key", fp, "--accept-new-host-key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(opt.KnownHosts); err == nil {
		t.Error("known_hosts was written without acceptance")
	}
}

func TestHostKeyAcceptNew(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	opt := fastOpts(srv, cfg)
	opt.KnownHosts = filepath.Join(home, "kh", "known_hosts")
	opt.AcceptNewHostKey = true
	h := dialTest(t, srv, opt)
	h.Close()
	b, err := os.ReadFile(opt.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(b)) != srv.KnownHostsLine() {
		t.Fatalf("known_hosts has %q, want %q", b, srv.KnownHostsLine())
	}
	// Now known: a plain connection works.
	opt.AcceptNewHostKey = false
	dialTest(t, srv, opt).Close()
}

func TestHostKeyPromptAsksWithFingerprint(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	opt := fastOpts(srv, cfg)
	opt.KnownHosts = filepath.Join(home, "known_hosts")
	var asked []string
	answer := "no"
	opt.Prompt = func(q string, secret bool) (string, error) {
		if secret {
			t.Errorf("host key question asked as a secret")
		}
		asked = append(asked, q)
		return answer, nil
	}
	if err := dialErr(t, srv, opt); err == nil || !strings.Contains(err.Error(), "not accepted") {
		t.Fatalf("answer no: %v", err)
	}
	answer = "yes"
	dialTest(t, srv, opt).Close()
	if len(asked) != 2 || !strings.Contains(asked[1], gossh.FingerprintSHA256(srv.HostKey)) {
		t.Fatalf("questions %q", asked)
	}
	b, _ := os.ReadFile(opt.KnownHosts)
	if !strings.Contains(string(b), strings.Fields(srv.KnownHostsLine())[2]) {
		t.Fatalf("accepted key not recorded: %q", b)
	}
}

func TestHostKeyChangedRefused(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	other, err := sshtest.WriteKey(filepath.Join(home, "other"), "")
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(home, "known_hosts")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.Addr())}, other)+"\n"), 0o600)
	opt := fastOpts(srv, cfg)
	opt.KnownHosts = kh
	opt.AcceptNewHostKey = true // must not matter for a changed key
	opt.Prompt = func(string, bool) (string, error) { t.Error("asked about a changed key"); return "yes", nil }
	err = dialErr(t, srv, opt)
	t.Logf("%v", err)
	var hke *HostKeyError
	if !errors.As(err, &hke) || !hke.Changed || !isPermanent(err) {
		t.Fatalf("want a permanent changed-key error, got %v", err)
	}
	for _, want := range []string{"host key changed", gossh.FingerprintSHA256(other), gossh.FingerprintSHA256(srv.HostKey), kh + ":1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestHostKeyHashedByOpenSSH(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	kh := filepath.Join(home, "known_hosts")
	os.WriteFile(kh, []byte(srv.KnownHostsLine()+"\n"), 0o600)
	if out, err := exec.Command("ssh-keygen", "-H", "-f", kh).CombinedOutput(); err != nil {
		t.Skipf("ssh-keygen -H: %v %s", err, out)
	}
	b, _ := os.ReadFile(kh)
	if !strings.HasPrefix(string(b), "|1|") {
		t.Fatalf("not hashed: %q", b)
	}
	opt := fastOpts(srv, cfg)
	opt.KnownHosts = kh
	dialTest(t, srv, opt).Close()
}

// TestHostKeyMultiKeyServer: the server has ECDSA and Ed25519 keys and
// known_hosts only the Ed25519 one; asking for the recorded type avoids a
// false "changed".
func TestHostKeyMultiKeyServer(t *testing.T) {
	_, cfg := isolate(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	ecPath := filepath.Join(dir, "host_ecdsa")
	os.WriteFile(ecPath, pem.EncodeToMemory(block), 0o600)
	srv := sshtest.Start(t, sshtest.Options{ExtraConfig: []string{"HostKey " + ecPath}})
	dialTest(t, srv, fastOpts(srv, cfg)).Close()
}
