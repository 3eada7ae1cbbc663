package fleet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// netns is one agent host's network namespace, joined to this one by a
// veth pair: this side hostIP, the namespace's side nsIP (a /30 of
// 10.250.0.0/16 that lives only inside this machine).
type netns struct {
	name, hostIP, nsIP string
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// nsMade counts the namespaces this test process made: each its name,
// its veth pair and its /30.
var nsMade atomic.Int32

// newNetns makes a namespace, removed when the test ends. Its default
// route leads back here, where the server listens.
func newNetns(t *testing.T) netns {
	pid, k := os.Getpid(), int(nsMade.Add(1))
	octet := 64 + (pid%16)*8 + k%8
	n := netns{name: fmt.Sprintf("pdfleet-%d-%d", pid, k), hostIP: fmt.Sprintf("10.250.%d.1", octet), nsIP: fmt.Sprintf("10.250.%d.2", octet)}
	vh, vn := fmt.Sprintf("pf%dh%d", pid%100000, k), fmt.Sprintf("pf%dn%d", pid%100000, k)
	ipCmd(t, "netns", "add", n.name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.name).Run() }) // its veth end goes with it, and the pair
	ipCmd(t, "link", "add", vh, "type", "veth", "peer", "name", vn)
	t.Cleanup(func() { exec.Command("ip", "link", "del", vh).Run() }) // a pair left here when a step below failed
	ipCmd(t, "link", "set", vn, "netns", n.name)
	ipCmd(t, "addr", "add", n.hostIP+"/30", "dev", vh)
	ipCmd(t, "link", "set", vh, "up")
	in := func(args ...string) { ipCmd(t, append([]string{"netns", "exec", n.name, "ip"}, args...)...) }
	in("addr", "add", n.nsIP+"/30", "dev", vn)
	in("link", "set", vn, "up")
	in("link", "set", "lo", "up")
	in("route", "add", "default", "via", n.hostIP)
	return n
}

// nsMembers gives each of n agents a host of its own network namespace:
// its sshd runs inside it and is reached over its veth pair. The server
// (an emulator) listens on the first pair's address here, which every
// namespace reaches by its default route; its URL is returned.
func nsMembers(t *testing.T, n int, cfg vllmemu.Config) ([]Member, []string, []string, string) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root (ip netns add); run as root to give each agent its own network stack")
	}
	sshtest.Require(t)
	exe := profdeckBinary(t)
	var ms []Member
	var caches, pidFiles []string
	var first netns
	for k := range n {
		ns := newNetns(t)
		if k == 0 {
			first = ns
		}
		cache := t.TempDir()
		srv := sshtest.Start(t, sshtest.Options{Host: ns.nsIP, Wrap: []string{"ip", "netns", "exec", ns.name}, Env: []string{"XDG_CACHE_HOME=" + cache}})
		h := dialServer(t, srv)
		ms = append(ms, Member{Name: "ns" + string(rune('1'+k)), Opt: onhost.Options{Host: h, Exe: exe}})
		caches, pidFiles = append(caches, cache), append(pidFiles, filepath.Join(srv.Dir, "sshd.pid"))
	}
	if cfg.Model == "" {
		cfg.Model = "test/model"
	}
	emu := vllmemu.New(cfg)
	ln, err := net.Listen("tcp", first.hostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: emu, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hs.Shutdown(ctx)
		hs.Close()
		emu.Close()
	})
	return ms, caches, pidFiles, "http://" + ln.Addr().String()
}

// netnsOf is the network namespace of the process whose pid file is path.
func netnsOf(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := os.Readlink("/proc/" + strings.TrimSpace(string(b)) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// Two and four agents, each on a host with its own network stack (an sshd
// in its own network namespace, reached over a veth pair), run one level
// against one server: every percentile the level reports is that of all
// the requests within 1%, and no agent is left.
func TestAgentsInTheirOwnNetworkNamespaces(t *testing.T) {
	for _, n := range []int{2, 4} {
		ms, caches, pids, url := nsMembers(t, n, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
		seen := map[string]bool{}
		self, _ := os.Readlink("/proc/self/ns/net")
		for _, p := range pids {
			seen[netnsOf(t, p)] = true
		}
		if len(seen) != n || seen[self] {
			t.Fatalf("%d agents' sshds in %d network namespaces (this one among them: %v)", n, len(seen), seen[self])
		}
		buf := newLockedBuf()
		cfg := levelConfig(url, 60)
		cfg.JSONL, cfg.Gaps = buf, true
		lv, err := RunClosed(context.Background(), cfg, 8, ms)
		if err != nil {
			t.Fatal(err)
		}
		recs := finished(t, &buf.b)
		if lv.Partial || lv.OK != 60 || len(recs) != 60 {
			t.Fatalf("%d agents: ok %d, %d records, note %q", n, lv.OK, len(recs), lv.Note())
		}
		lr := lv.LevelResult(8, 0)
		worst := worstError(t, n, &lr, recs)
		for _, c := range caches {
			noAgentLeft(t, c)
		}
		t.Logf("%d agents in %d network namespaces: largest error by metric: %s", n, len(seen), errorsText(worst))
	}
}
