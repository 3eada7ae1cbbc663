package ssh

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, text string) *sshConfig {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := loadSSHConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestSplitTarget(t *testing.T) {
	for _, c := range []struct {
		in, user, host string
		port           int
		bad            bool
	}{
		{in: "gpu1", host: "gpu1"},
		{in: "bob@gpu1", user: "bob", host: "gpu1"},
		{in: "bob@10.0.0.5:2222", user: "bob", host: "10.0.0.5", port: 2222},
		{in: "[::1]:22", host: "::1", port: 22},
		{in: "ssh://u@h:23", user: "u", host: "h", port: 23},
		{in: "fe80::1", host: "fe80::1"},
		{in: "h:99999", bad: true},
		{in: "@h", bad: true},
		{in: "", bad: true},
		{in: "a b", bad: true},
		{in: "-oProxyCommand=touch /tmp/x", bad: true},
		{in: "u@-oProxyCommand=x", bad: true},
	} {
		u, h, p, err := splitTarget(c.in)
		if (err != nil) != c.bad || !c.bad && (u != c.user || h != c.host || p != c.port) {
			t.Errorf("%q: got %q %q %d %v", c.in, u, h, p, err)
		}
	}
}

func TestResolveConfig(t *testing.T) {
	home, _ := isolate(t)
	sc := writeConfig(t, `
Host gpu1
  HostName 10.0.0.5
  User alice
  Port 2200
  IdentityFile ~/.ssh/id_%h_%r
  IdentityFile /keys/%n.key
  IdentitiesOnly yes
  ProxyJump bastion,bob@inner:2022
  UserKnownHostsFile ~/kh1 %d/kh2
  ServerAliveInterval 10
  ServerAliveCountMax 2
  ConnectTimeout 7

Host bastion
  HostName bastion.example.com
  ProxyJump outer

Host outer
  User carol

Host *
  User default-user
  HashKnownHosts yes
`)
	c, err := sc.resolve("gpu1")
	if err != nil {
		t.Fatal(err)
	}
	if c.HostName != "10.0.0.5" || c.User != "alice" || c.Port != 2200 || c.Label() != "gpu1 (10.0.0.5:2200)" {
		t.Errorf("host %+v", c)
	}
	wantIDs := []string{home + "/.ssh/id_10.0.0.5_alice", "/keys/gpu1.key"}
	if strings.Join(c.IdentityFiles, ",") != strings.Join(wantIDs, ",") || !c.IdentitiesOnly {
		t.Errorf("identities %q only=%v", c.IdentityFiles, c.IdentitiesOnly)
	}
	if strings.Join(c.KnownHosts, ",") != home+"/kh1,"+home+"/kh2" || !c.HashKnownHosts {
		t.Errorf("known hosts %q hash=%v", c.KnownHosts, c.HashKnownHosts)
	}
	if c.AliveInterval != 10*time.Second || c.AliveCountMax != 2 || c.ConnectTimeout != 7*time.Second {
		t.Errorf("timers %v %d %v", c.AliveInterval, c.AliveCountMax, c.ConnectTimeout)
	}
	var hops []string
	for _, j := range c.Jumps {
		hops = append(hops, j.User+"@"+j.Addr())
	}
	want := "carol@outer:22,default-user@bastion.example.com:22,bob@inner:2022"
	if strings.Join(hops, ",") != want {
		t.Errorf("jumps %q, want %q", hops, want)
	}

	// The target as typed wins over the config.
	c, err = sc.resolve("root@gpu1:23")
	if err != nil || c.User != "root" || c.Port != 23 {
		t.Errorf("override: %+v %v", c, err)
	}
	// Unknown names pass through with defaults.
	c, err = sc.resolve("10.1.1.1")
	if err != nil || c.HostName != "10.1.1.1" || c.Port != 22 || c.User != "default-user" || len(c.Jumps) != 0 {
		t.Errorf("plain: %+v %v", c, err)
	}
}

func TestResolveConfigErrors(t *testing.T) {
	isolate(t)
	for _, c := range []struct{ conf, target, want string }{
		{"Host a\n  ProxyCommand nc %h %p\n", "a", "ProxyCommand is not supported"},
		{"Host a\n  Port eighty\n", "a", `bad Port "eighty"`},
		{"Host a\n  ProxyJump a\n", "a", "too long"},
	} {
		p := filepath.Join(t.TempDir(), "config")
		os.WriteFile(p, []byte(c.conf), 0o600)
		sc, err := loadSSHConfig(p)
		if err == nil {
			_, err = sc.resolve(c.target)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.conf, err, c.want)
		}
	}
	if _, err := loadSSHConfig("/nonexistent/config"); err == nil || !strings.Contains(err.Error(), "/nonexistent/config") {
		t.Errorf("missing config: %v", err)
	}
}

// Match blocks no longer make every host fail: the ones that can be judged
// before connecting apply as OpenSSH would apply them, the others (exec,
// user, …) are skipped.
func TestResolveConfigMatchBlocks(t *testing.T) {
	isolate(t)
	sc := writeConfig(t, `
Match exec "test -f /nonexistent"
  User fromexec
Match host gpu*,!gpu9 localuser `+localUser()+`
  User fromhost
  Port 2201
Match originalhost jump
  HostName 10.9.9.9
Match localuser nobody-else-xyz
  Port 9
Match user root
  Port 10
Match !host gpu1
  Port 11
Host gpu9
  User nine
Match all
  ConnectTimeout 7
`)
	for _, c := range []struct {
		target, user, host string
		port               int
	}{
		{"gpu1", "fromhost", "gpu1", 2201},
		{"gpu9", "nine", "gpu9", 22},
		{"jump", localUser(), "10.9.9.9", 22},
		{"other", localUser(), "other", 22},
	} {
		hc, err := sc.resolve(c.target)
		if err != nil {
			t.Fatalf("%s: %v", c.target, err)
		}
		if hc.User != c.user || hc.HostName != c.host || hc.Port != c.port || hc.ConnectTimeout != 7*time.Second {
			t.Errorf("%s: user %q host %q port %d timeout %v; want %q %q %d 7s", c.target, hc.User, hc.HostName, hc.Port, hc.ConnectTimeout, c.user, c.host, c.port)
		}
	}
}

func TestMatchHosts(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"Match all", "*"},
		{"match Host a,b", "a b"},
		{"Match=host a", "a"},
		{"Match host a originalhost b", matchNone},
		{"Match host", matchNone},
		{"Match final host a", "a"},
		{"Match canonical host a", matchNone},
		{`Match exec "a b" host c`, matchNone},
		{"Match host a # comment", "a"},
		{"Match", matchNone},
	} {
		args, ok := matchArgs(c.line)
		if !ok || matchHosts(args) != c.want {
			t.Errorf("%q: %v %q, want %q", c.line, ok, matchHosts(args), c.want)
		}
	}
	if _, ok := matchArgs("MatchX a"); ok {
		t.Error("MatchX read as Match")
	}
}

// Any configuration text, Match lines included, is parsed or refused
// without a panic, and a Match line never reaches the parser as Match.
func FuzzRewriteMatch(f *testing.F) {
	for _, s := range []string{"Match all\n  User x\n", "Match host a,b exec \"x y\"\nHost c\n", "match=localuser root\n", "Match\n", "Match \"\n", "MATCH host *\n\tPort 2\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := rewriteMatch(b)
		for _, l := range strings.Split(string(out), "\n") {
			if _, ok := matchArgs(l); ok {
				t.Fatalf("a Match line left: %q", l)
			}
		}
		_, _ = decodeConfig(bytes.NewReader(b))
	})
}
