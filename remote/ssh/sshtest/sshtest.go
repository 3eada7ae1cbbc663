// Package sshtest starts a real OpenSSH sshd on 127.0.0.1 for tests: a
// temporary directory with its own config, host key, client key and
// authorized_keys, a free port, and the current user allowed in. Tests
// stop it, restart it and read its log. When sshd is not installed the test
// is skipped, or fails when the CI environment variable is set.
package sshtest

import (
	"bufio"
	"cmp"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// SSHD is where sshd is looked for, an absolute path: PROFDECK_SSHD when
// set (an sshd unpacked elsewhere), else /usr/sbin/sshd.
var SSHD = sshdPath()

func sshdPath() string {
	if p := os.Getenv("PROFDECK_SSHD"); filepath.IsAbs(p) {
		return p
	}
	return "/usr/sbin/sshd"
}

// Options change the server.
type Options struct {
	NoSFTP         bool     // leave the sftp subsystem out
	LogLevel       string   // sshd LogLevel (default INFO)
	ExtraConfig    []string // more sshd_config lines
	AuthorizedKeys []string // more authorized_keys lines
	// RC, when set, is a ~/.bashrc that bash reads for each command, as
	// it reads the login's on a real host: the server gives its sessions
	// a home of their own holding it. Without it the server sets SHLVL=1,
	// which makes bash skip the rc file. The machine's own ~/.bashrc is
	// never read: it would make the tests depend on it (pyenv init costs
	// a second, and waits 60 s on a lock a killed shell left).
	RC string
	// Env is more environment for every session, NAME=value without spaces
	// (e.g. a PATH with a stand-in nvidia-smi first).
	Env []string
	// Host is the address the server listens on (default 127.0.0.1).
	Host string
	// Wrap is a command line the server runs under, e.g. "ip netns exec
	// NS" to give it a network namespace of its own.
	Wrap []string
}

// Server is one running sshd.
type Server struct {
	t    testing.TB
	opts Options

	Dir         string // temporary directory holding everything below
	Host        string // "127.0.0.1"
	Port        int
	User        string // the current user
	HostKey     gossh.PublicKey
	ClientKey   string // private key file whose public key is authorised
	ClientPub   gossh.PublicKey
	KnownHosts  string // known_hosts file with the host key for [127.0.0.1]:port
	ConfigFile  string // sshd_config
	AuthKeyFile string

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *SyncBuffer
	done chan struct{}
}

// Require skips the test when sshd is missing, or fails it under CI.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(SSHD); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("sshd not installed at %s (apt-get install -y openssh-server): %v", SSHD, err)
		}
		t.Skipf("sshd not installed at %s: %v", SSHD, err)
	}
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	Require(t)
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshtest: current user: %v", err)
	}
	dir, err := os.MkdirTemp("", "sshtest-")
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	s := &Server{t: t, opts: opts, Dir: dir, Host: cmp.Or(opts.Host, "127.0.0.1"), User: u.Username}
	hostPub, err := WriteKey(filepath.Join(dir, "host_ed25519"), "")
	if err != nil {
		t.Fatalf("sshtest: host key: %v", err)
	}
	s.HostKey = hostPub
	s.ClientKey = filepath.Join(dir, "id_ed25519")
	if s.ClientPub, err = WriteKey(s.ClientKey, ""); err != nil {
		t.Fatalf("sshtest: client key: %v", err)
	}
	s.AuthKeyFile = filepath.Join(dir, "authorized_keys")
	lines := append([]string{strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.ClientPub)))}, opts.AuthorizedKeys...)
	if err := os.WriteFile(s.AuthKeyFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	s.Port = FreePort(t)
	s.KnownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(s.KnownHosts, []byte(s.KnownHostsLine()+"\n"), 0o600); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	if opts.RC != "" {
		home := filepath.Join(dir, "home")
		if err := os.Mkdir(home, 0o755); err != nil {
			t.Fatalf("sshtest: %v", err)
		}
		if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(opts.RC), 0o644); err != nil {
			t.Fatalf("sshtest: %v", err)
		}
	}
	s.ConfigFile = filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(s.ConfigFile, []byte(s.config()), 0o600); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Logf("sshtest: /run/sshd: %v", err)
	}
	if out, err := exec.Command(SSHD, "-t", "-f", s.ConfigFile).CombinedOutput(); err != nil {
		t.Fatalf("sshtest: sshd -t: %v: %s", err, out)
	}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// Addr is "host:port" (127.0.0.1 unless Options.Host says).
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Target is "user@host:port".
func (s *Server) Target() string { return s.User + "@" + s.Addr() }

// KnownHostsLine is the known_hosts line for this server.
func (s *Server) KnownHostsLine() string {
	return fmt.Sprintf("[%s]:%d %s", s.Host, s.Port, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.HostKey))))
}

// ConfigBlock is an ssh_config Host block for alias pointing at this
// server with its client key and known_hosts.
func (s *Server) ConfigBlock(alias string) string {
	return fmt.Sprintf("Host %s\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n\n",
		alias, s.Host, s.Port, s.User, s.ClientKey, s.KnownHosts)
}

func (s *Server) config() string {
	level := s.opts.LogLevel
	if level == "" {
		level = "INFO"
	}
	lines := []string{
		"ListenAddress " + s.Addr(),
		"HostKey " + filepath.Join(s.Dir, "host_ed25519"),
		"PidFile " + filepath.Join(s.Dir, "sshd.pid"),
		"AuthorizedKeysFile " + s.AuthKeyFile,
		"StrictModes no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"PermitRootLogin prohibit-password",
		"AllowUsers " + s.User,
		"ClientAliveInterval 5",
		"ClientAliveCountMax 3",
		"LogLevel " + level,
	}
	env := s.opts.Env
	if s.opts.RC == "" {
		env = append([]string{"SHLVL=1"}, env...)
	} else {
		env = append([]string{"HOME=" + filepath.Join(s.Dir, "home")}, env...)
	}
	if len(env) > 0 {
		lines = append(lines, "SetEnv "+strings.Join(env, " "))
	}
	if !s.opts.NoSFTP {
		lines = append(lines, "Subsystem sftp internal-sftp")
	}
	lines = append(lines, s.opts.ExtraConfig...)
	return strings.Join(lines, "\n") + "\n"
}

func (s *Server) start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		s.log = &SyncBuffer{}
	}
	args := append(append([]string(nil), s.opts.Wrap...), SSHD, "-D", "-e", "-f", s.ConfigFile)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = s.log
	cmd.Stdout = s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("sshtest: starting sshd: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ready(s.Addr()) {
			return
		}
		select {
		case <-done:
			s.t.Fatalf("sshtest: sshd exited at start: %s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("sshtest: sshd not ready on %s after 5 s: %s", s.Addr(), s.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ready reports whether an SSH banner comes from addr.
func ready(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-")
}

// Stop kills the listener and every connection's processes, as a crash
// would: clients see their connections drop at once. Commands started by
// sessions keep running, as they do after a real sshd dies.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	pid := s.cmd.Process.Pid
	for _, child := range children(pid) {
		syscall.Kill(-child, syscall.SIGKILL) // per-connection sshd: own group
		syscall.Kill(child, syscall.SIGKILL)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.t.Errorf("sshtest: sshd %d did not exit", pid)
	}
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Log is what sshd wrote so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parens.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// WriteKey writes a new ed25519 private key in OpenSSH format (encrypted
// when passphrase is set) and its .pub file, and returns the public key.
func WriteKey(path, passphrase string) (gossh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = gossh.MarshalPrivateKey(priv, "sshtest")
	} else {
		block, err = gossh.MarshalPrivateKeyWithPassphrase(priv, "sshtest", []byte(passphrase))
	}
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	sp, err := gossh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path+".pub", gossh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		return nil, err
	}
	return sp, nil
}

// Authorize adds a public key to the server's authorized_keys.
func (s *Server) Authorize(pub gossh.PublicKey) {
	s.t.Helper()
	f, err := os.OpenFile(s.AuthKeyFile, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatalf("sshtest: %v", err)
	}
	defer f.Close()
	f.Write(gossh.MarshalAuthorizedKey(pub))
}

// SyncBuffer is a strings.Builder that is safe for concurrent use: sshd's
// log, or what a command prints while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
