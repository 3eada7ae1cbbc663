package macro_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
			s0 := srv.TreeCPU(b)
			r := sweepRun(b, url, c, 2*c, h.DialContext)
			sshd := (srv.TreeCPU(b) - s0).Seconds() / float64(r.tokens) * 1e6
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
