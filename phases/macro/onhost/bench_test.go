package onhost_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote/selfbin"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/ssh"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// benchStep is the server's step in BenchmarkHereVsHost: one token to
// every stream every 2 ms.
const benchStep = 2 * time.Millisecond

// serveEmuChild is the test binary as the benchmark's server (with
// PROFDECK_ONHOST_EMU set): an emulator on loopback until stdin closes, in
// its own process, so neither load generator shares a process with it.
func serveEmuChild() {
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", StepTime: benchStep, StepPerSeq: 1, PrefillPerToken: 1, MaxNumSeqs: 100000})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	go func() { _ = http.Serve(ln, emu) }()
	fmt.Println("http://" + ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func startEmuChild(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROFDECK_ONHOST_EMU=1")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(line)
}

// serverRecord is the server's own figures over a stretch: the mean TTFT,
// ITL and TPOT of what it sent, from its histograms' sums and counts.
type serverRecord struct{ ttft, itl, tpot, n [2]float64 }

func readHist(b *testing.B, url string) map[string]float64 {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), "{")
		if !ok || !(strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count")) {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// serverMeans are the server's mean TTFT, ITL and TPOT in ms between two
// readings.
func serverMeans(a, z map[string]float64) (ttft, itl, tpot float64) {
	mean := func(h string) float64 {
		return (z[h+"_sum"] - a[h+"_sum"]) / (z[h+"_count"] - a[h+"_count"]) * 1e3
	}
	return mean("vllm:time_to_first_token_seconds"), mean("vllm:inter_token_latency_seconds"), mean("vllm:request_time_per_output_token_seconds")
}

// BenchmarkHereVsHost measures what --loadgen host costs and gains through
// a real sshd on loopback: for C=4 and C=32 (one-token chunks every 2 ms,
// 64 output tokens), the client's mean TTFT, ITL and TPOT against the
// server's own record of the same requests, on three paths: direct (the
// floor), here (HTTP through the SSH connection) and host (the agent on
// the host, its events back over SSH); the CPU the host side spent per
// token (sshd and everything under it, the agent included); and the time
// to copy profdeck to the host the first time and to find it cached.
// Run with -benchtime 1x.
func BenchmarkHereVsHost(b *testing.B) {
	sshtest.Require(b)
	var err error
	url := startEmuChild(b)
	cache := b.TempDir()
	srv := sshtest.Start(b, sshtest.Options{Env: []string{"XDG_CACHE_HOME=" + cache}})
	exe := benchBinary(b)
	rtt := 0 * time.Millisecond
	if v := os.Getenv("PROFDECK_BENCH_RTT"); v != "" {
		if rtt, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	h := dialBench(b, srv, rtt)
	for _, fresh := range []bool{true, false} {
		in, err := selfbin.Ensure(context.Background(), h, exe)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "install: copied=%v %.1f MiB in %v (fresh cache: %v)\n", in.Copied, float64(in.Bytes)/(1<<20), in.Took.Round(time.Millisecond), fresh)
	}
	fmt.Fprintf(os.Stderr, "round trip added between this side and the host: %v\n", rtt)
	for i := 0; i < b.N; i++ {
		for _, c := range []int{4, 32} {
			for _, path := range []string{"direct", "here", "host"} {
				cfg := sweepConfig(url, c)
				cfg.Model, cfg.Requests, cfg.Warmup, cfg.OutputLen, cfg.Seed, cfg.NoPreflight = "test/model", 8*c, 0, 64, 1, true
				var eng macro.Engine
				switch path {
				case "here":
					cfg.Dial, cfg.Host = h.DialContext, h
				case "host":
					eng, err = onhost.New(cfg, onhost.Options{Host: h, Exe: exe})
				}
				if eng == nil && err == nil {
					eng, err = macro.NewSweep(cfg)
				}
				if err != nil {
					b.Fatal(err)
				}
				m0, cpu0, t0 := readHist(b, url), srv.TreeCPU(b), time.Now()
				res, err := eng.Run(context.Background(), nil)
				if err != nil {
					b.Fatal(err)
				}
				wall, cpu, m1 := time.Since(t0), srv.TreeCPU(b)-cpu0, readHist(b, url)
				l := res.Levels[0]
				sTTFT, sITL, sTPOT := serverMeans(m0, m1)
				fmt.Fprintf(os.Stderr, "C=%-3d %-6s TTFT %6.2f ms (server %5.2f, %+6.2f ms)  ITL %5.3f ms (server %5.3f, %+6.2f%%)  TPOT %+6.2f%%  p50 TTFT %6.2f ITL %5.3f  host CPU %4.0f ms, %5.1f µs/token  wall %.1f s\n",
					c, path, l.MeanTTFTms, sTTFT, l.MeanTTFTms-sTTFT, l.MeanITLms, sITL, 100*(l.MeanITLms-sITL)/sITL,
					100*(l.MeanTPOTms-sTPOT)/sTPOT, l.MedianTTFTms, l.MedianITLms,
					cpu.Seconds()*1e3, cpu.Seconds()/float64(l.TotalOutputTokens)*1e6, wall.Seconds())
			}
		}
	}
}

// dialBench dials srv, through a proxy adding rtt when it is not zero.
func dialBench(b *testing.B, srv *sshtest.Server, rtt time.Duration) *ssh.Host {
	dir := b.TempDir()
	cfgFile, known, addr := filepath.Join(dir, "ssh_config"), srv.KnownHosts, srv.Addr()
	os.WriteFile(cfgFile, nil, 0o600)
	if rtt > 0 {
		addr = delayProxy(b, srv.Addr(), rtt/2)
		_, port, _ := net.SplitHostPort(addr)
		key := strings.TrimPrefix(srv.KnownHostsLine(), fmt.Sprintf("[%s]:%d ", srv.Host, srv.Port))
		known = filepath.Join(dir, "known_hosts")
		os.WriteFile(known, []byte(fmt.Sprintf("[127.0.0.1]:%s %s\n", port, key)), 0o600)
	}
	h, err := ssh.Dial(context.Background(), srv.User+"@"+addr, ssh.Options{Identity: srv.ClientKey, KnownHosts: known, SSHConfig: cfgFile})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
}

// benchBinary builds profdeck for the benchmark.
func benchBinary(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "profdeck")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/profdeck/profdeck").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
