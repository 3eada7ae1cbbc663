// Command sshpath-hops times streamed requests hop by hop, for
// scripts/sshpath-table: a closed loop of C streams against the recording
// server (the phases/macro test binary with PROFDECK_REC_CHILD=1, which
// stamps each request's arrival and first write in its response headers),
// direct or through one or several SSH connections opened with profdeck's
// own SSH host. For a level's first wave (its first C requests, which start
// together) and for the later ones it prints the medians of the request's
// transit, the server's own TTFT, the first chunk's transit and the whole
// excess over the server's TTFT, and then the CPU this process ran and
// waited for (its threads' /proc schedstat: time on a run queue is time a
// busy machine added).
//
//	sshpath-hops -url URL [-ssh user@host:port -i KEY -kh KNOWN_HOSTS -F CONFIG] [-conns N] [-c C] [-rounds N] [-label NAME] [-cpuprofile FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profdeck/profdeck/remote/ssh"
)

// timing is one request: when it was sent, when the server says it arrived
// and wrote its first chunk, and when that chunk was read here.
type timing struct {
	k                         int // the request's round in its stream: 0 is the first wave
	send, arrive, first, recv time.Time
}

type options struct {
	url, target, identity, knownHosts, sshConfig, label, profile string
	conns, c, rounds                                             int
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "the recording server's URL")
	flag.StringVar(&o.target, "ssh", "", "SSH host to dial through (user@host:port); none: direct")
	flag.StringVar(&o.identity, "i", "", "identity file")
	flag.StringVar(&o.knownHosts, "kh", "", "known_hosts file")
	flag.StringVar(&o.sshConfig, "F", "", "ssh config file")
	flag.IntVar(&o.conns, "conns", 1, "SSH connections, used in turn")
	flag.IntVar(&o.c, "c", 32, "streams at once")
	flag.IntVar(&o.rounds, "rounds", 4, "requests per stream")
	flag.StringVar(&o.label, "label", "", "row label")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of the streams here")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "sshpath-hops:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.url == "" || o.c < 1 || o.rounds < 2 || o.conns < 1 {
		return fmt.Errorf("-url is required; -c, -conns at least 1, -rounds at least 2")
	}
	dial, closeAll, err := dialer(o)
	if err != nil {
		return err
	}
	defer closeAll()
	tr := &http.Transport{DialContext: dial, MaxIdleConnsPerHost: o.c + 16, MaxIdleConns: o.c + 16,
		DisableCompression: true, ReadBufferSize: 64 << 10}
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	defer tr.CloseIdleConnections()
	if o.profile != "" {
		f, err := os.Create(o.profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ts, err := loop(hc, o)
	if err != nil {
		return err
	}
	report(o.label, ts)
	schedstat(o.label)
	return nil
}

// dialer connects directly, or through o.conns SSH connections in turn.
func dialer(o options) (func(ctx context.Context, network, addr string) (net.Conn, error), func(), error) {
	if o.target == "" {
		return (&net.Dialer{}).DialContext, func() {}, nil
	}
	var hosts []*ssh.Host
	closeAll := func() {
		for _, h := range hosts {
			h.Close()
		}
	}
	for range o.conns {
		h, err := ssh.Dial(context.Background(), o.target, ssh.Options{Identity: o.identity, KnownHosts: o.knownHosts, SSHConfig: o.sshConfig})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		hosts = append(hosts, h)
	}
	var next atomic.Int64
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return hosts[int(next.Add(1))%len(hosts)].DialContext(ctx, network, addr)
	}, closeAll, nil
}

// loop runs o.c streams of o.rounds requests each, a new one as soon as
// the last ended.
func loop(hc *http.Client, o options) ([]timing, error) {
	var (
		mu    sync.Mutex
		ts    []timing
		first error
		wg    sync.WaitGroup
	)
	for range o.c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range o.rounds {
				t, err := request(hc, o.url, k)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					ts = append(ts, t)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return ts, first
}

// request sends one 250-token stream and times its first chunk.
func request(hc *http.Client, url string, k int) (timing, error) {
	t := timing{k: k, send: time.Now()}
	resp, err := hc.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"max_tokens":250}`))
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && t.recv.IsZero() {
			t.recv = time.Now()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, err
		}
	}
	a, err1 := strconv.ParseInt(resp.Header.Get("X-Arrived-Unix-Ns"), 10, 64)
	f, err2 := strconv.ParseInt(resp.Header.Get("X-First-Write-Unix-Ns"), 10, 64)
	if err1 != nil || err2 != nil || t.recv.IsZero() {
		return t, fmt.Errorf("HTTP %d without the recording server's timing headers", resp.StatusCode)
	}
	t.arrive, t.first = time.Unix(0, a), time.Unix(0, f)
	return t, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// median is the value at rank ⌈n/2⌉, as the sweep takes its own.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[(len(v)+1)/2-1]
}

// report prints the first wave's and the later waves' medians.
func report(label string, ts []timing) {
	for _, part := range []struct {
		name  string
		first bool
	}{{"first wave", true}, {"later waves", false}} {
		var req, srv, back, excess []float64
		for _, t := range ts {
			if (t.k == 0) != part.first {
				continue
			}
			req = append(req, ms(t.arrive.Sub(t.send)))
			srv = append(srv, ms(t.first.Sub(t.arrive)))
			back = append(back, ms(t.recv.Sub(t.first)))
			excess = append(excess, ms(t.recv.Sub(t.send)-t.first.Sub(t.arrive)))
		}
		fmt.Printf("%-20s %-11s n=%-4d request %6.2f ms · server TTFT %5.2f ms · first chunk back %6.2f ms · TTFT excess %6.2f ms (medians)\n",
			label, part.name, len(req), median(req), median(srv), median(back), median(excess))
	}
}

// schedstat prints what this process's threads ran and waited on a run
// queue (Linux; nothing elsewhere).
func schedstat(label string) {
	files, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var run, wait, n float64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var r, w, k float64
		if _, err := fmt.Sscan(string(b), &r, &w, &k); err == nil {
			run, wait, n = run+r, wait+w, n+k
		}
	}
	if n > 0 {
		fmt.Printf("%-20s client CPU: ran %.0f ms, waited for a CPU %.0f ms, %.0f µs per wake-up\n", label, run/1e6, wait/1e6, wait/1e3/n)
	}
}
