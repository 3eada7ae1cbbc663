package macro_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/ssh"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// sshStep is the server's step in the SSH benchmark: C tokens every 10 ms.
const sshStep = 10 * time.Millisecond

// BenchmarkLoadgenSSH is item (b): the sweep client's HTTP through
// direct-tcpip channels of an SSH connection to a real sshd on loopback,
// which forwards to the emulator child, as the cockpit reaches a server
// bound to the GPU host's localhost. Levels rise (C×100 tokens/s, one
// token per chunk); each reports the CPU per token on this side and the
// client's mean TPOT against the server's own record of the same
// requests. The last figure is the highest tokens/s whose TPOT stayed
// within 1%, with at most 1% of the chunks carrying more than one token.
// All of it goes through one SSH connection. Run with -benchtime 1x (PROFDECK_BENCH_C overrides the
// levels).
func BenchmarkLoadgenSSH(b *testing.B) {
	sshtest.Require(b)
	levels := benchLevels(b, []int{64, 128, 256, 384, 512})
	url := loadServer(b, sshStep)
	srv := sshtest.Start(b, sshtest.Options{})
	h, err := ssh.Dial(context.Background(), srv.Target(), sshBenchOpts(b, srv))
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	for i := 0; i < b.N; i++ {
		best := 0.0
		for _, c := range levels {
			fmt.Fprintf(os.Stderr, "SSH C=%d, %d requests × %d tokens, step %v:\n", c, 2*c, loadOut, sshStep)
			s0 := treeCPU(b, srv)
			r := sweepRun(b, url, c, 2*c, h.DialContext)
			sshd := (treeCPU(b, srv) - s0).Seconds() / float64(r.tokens) * 1e6
			r.report(b, fmt.Sprintf("C%d", c))
			b.ReportMetric(sshd, fmt.Sprintf("C%d-sshd-cpu-µs/tok", c))
			fmt.Fprintf(os.Stderr, "  sshd  %.2f µs/token (the server side's SSH cost, on the GPU host in real use)\n", sshd)
			tps := r.tput
			// Counted only while the chunks still carry one token each
			// (the server merges tokens once its writes fall behind).
			d := (r.meanTPOT - r.srvTPOT) / r.srvTPOT
			if d <= 0.01 && d >= -0.01 && float64(r.tokens) <= 1.01*float64(r.chunks) && tps > best {
				best = tps
			}
		}
		b.ReportMetric(best, "max-tok/s-tpot-1%")
		fmt.Fprintf(os.Stderr, "SSH, one connection: highest tokens/s of one-token chunks with TPOT within 1%% of the server's: %.0f\n", best)
	}
}

// sshBenchOpts connects with the test server's key and known_hosts only.
func sshBenchOpts(b *testing.B, srv *sshtest.Server) ssh.Options {
	home := b.TempDir()
	b.Setenv("HOME", home)
	b.Setenv("SSH_AUTH_SOCK", "")
	cfg := filepath.Join(home, "config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return ssh.Options{Identity: srv.ClientKey, KnownHosts: srv.KnownHosts, SSHConfig: cfg}
}

// treeCPU is the CPU time of the test sshd and every process under it (the
// connection's own sshd processes), from /proc.
func treeCPU(b *testing.B, srv *sshtest.Server) time.Duration {
	raw, err := os.ReadFile(filepath.Join(srv.Dir, "sshd.pid"))
	if err != nil {
		b.Fatal(err)
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
		// Fields after the command's closing parenthesis: state ppid ...
		// utime is field 14 and stime 15 of the whole line.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		stt, _ := strconv.ParseInt(f[12], 10, 64)
		ticks[pid] = ut + stt
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
