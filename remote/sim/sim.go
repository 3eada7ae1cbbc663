// Package sim is the simulated deployment: an in-process stand-in for an
// 8-GPU server running vLLM, used by `profdeck demo` and by tests.
//
// A Deployment is a remote.Host. Its shell understands the commands a
// profiling campaign sends (nvidia-smi, the server's launch line, kill, cat,
// tail ...), its files live in memory, and its "vLLM server" is a real HTTP
// server on a loopback port that loads a model over Options.LoadTime, writing
// a vLLM log as it goes. Everything it shows is marked SIMULATED.
//
// The shell's commands are one table (commandTable in commands.go); the
// profiler's endpoints are added by Start, other endpoints with
// Deployment.Handle.
package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// Options configure the simulated deployment. The zero value of each field
// means its default.
type Options struct {
	GPUs       int           // default 8
	GPUName    string        // default "NVIDIA H200"
	GPUMemMiB  int           // default 143771
	WeightsGiB float64       // memory.used per GPU once the weights are loaded, default 74.9
	KVCacheGiB float64       // memory taken after the weights (KV cache + CUDA graphs), default 45
	LoadTime   time.Duration // wall time of a whole load (a 30-minute real load compressed), default 60s
	// StallAtGiB, when set, stops memory from growing at this many GiB of
	// memory.used on every GPU, and the log stops progressing.
	StallAtGiB float64
	// StallWhenProfiling applies StallAtGiB only to launches with the torch
	// profiler enabled (the demo's "restart with the profiler stalls" story).
	StallWhenProfiling bool
	// StallOnce applies the stall to the first launch it would apply to
	// only; a restart after it loads normally (the demo's "restart and it
	// works" ending).
	StallOnce bool
	// ProfilerStallAtGiB stalls the launches with the torch profiler
	// enabled at this many GiB per GPU (whatever StallAtGiB says); the
	// launches without it load normally unless StallAtGiB is set.
	ProfilerStallAtGiB float64
	// FailWith makes the load fail part-way with a realistic log error:
	// "oom" (during the KV cache allocation) or "nccl" (at distributed init).
	FailWith   string
	LogPath    string         // default "/var/log/vllm/server.log"
	ServerAddr string         // where the server listens as seen from the host, default "127.0.0.1:8000"
	AutoStart  bool           // start loading at once; otherwise on the launch command
	Model      string         // default "moonshotai/Kimi-K2.5"
	Emulator   vllmemu.Config // the OpenAI-compatible emulator; zero value = defaults
	// Engine is the server the deployment plays: "" (vLLM) or
	// EngineSGLang (SGLang's log lines and /metrics).
	Engine string
	Seed   int64
	// StatsInterval is how often the serving server logs its
	// "Engine 000: Avg prompt throughput" line while busy, default 10s.
	StatsInterval time.Duration
	// NoPySpy leaves py-spy off the host (a diagnosis then hints to install it).
	NoPySpy bool
	// NoNVLink makes the GPUs PCIe-only (`nvidia-smi nvlink -s` lists no
	// link); NoGPM makes dmon refuse --gpm-metrics (GPUs before Hopper).
	NoNVLink, NoGPM bool
	// PowerCapW, when set, holds each GPU's power at it: dmon's pviol then
	// reads the share held down and the SM clock drops.
	PowerCapW float64
	// Node is this node's rank among Nodes (StartNodes sets them); node 0
	// is the head. NodeName is the host's name (default "sim").
	Node, Nodes int
	NodeName    string
	// TP is the served model's tensor-parallel size (default: GPUs × nodes)
	// and Preset its shapes (default kimi-k2.5): the step model's inputs.
	TP     int
	Preset string
	// ProfilerFlush is how long stop_profile takes to "flush traces": nil
	// is the default 3s, a pointer to 0 no delay at all.
	ProfilerFlush *time.Duration
	// Others are processes of other users holding GPU memory beside the
	// server (a job of a colleague's): nvidia-smi lists them, ps shows
	// their owner and command line; profdeck never launched them.
	Others []OtherProc
}

// OtherProc is a process of another user that holds MiB of memory on GPU.
type OtherProc struct {
	PID, GPU, MiB int
	User, Command string
}

// The defaults of Options.
const (
	DefaultGPUs       = 8
	DefaultGPUName    = "NVIDIA H200"
	DefaultGPUMemMiB  = 143771
	DefaultWeightsGiB = 74.9
	DefaultKVCacheGiB = 45
	DefaultLoadTime   = 60 * time.Second
	DefaultLogPath    = "/var/log/vllm/server.log"
	DefaultServerAddr = "127.0.0.1:8000"
	DefaultModel      = vllmemu.DefaultModel
	// DefaultMaxBatchedTokens is the prompt tokens one step prefills at
	// most, as vLLM's --max-num-batched-tokens 2048.
	DefaultMaxBatchedTokens = 2048
	DefaultProfilerFlush    = 3 * time.Second
)

func (o Options) withDefaults() Options {
	if o.GPUs <= 0 {
		o.GPUs = DefaultGPUs
	}
	if o.GPUName == "" {
		o.GPUName = DefaultGPUName
	}
	if o.GPUMemMiB <= 0 {
		o.GPUMemMiB = DefaultGPUMemMiB
	}
	if o.WeightsGiB <= 0 {
		o.WeightsGiB = DefaultWeightsGiB
	}
	if o.KVCacheGiB <= 0 {
		o.KVCacheGiB = DefaultKVCacheGiB
	}
	if o.LoadTime <= 0 {
		o.LoadTime = DefaultLoadTime
	}
	if o.LogPath == "" {
		o.LogPath = DefaultLogPath
	}
	if o.ServerAddr == "" {
		o.ServerAddr = DefaultServerAddr
	}
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if o.StatsInterval <= 0 {
		o.StatsInterval = 10 * time.Second
	}
	if o.ProfilerFlush == nil {
		o.ProfilerFlush = new(DefaultProfilerFlush)
	}
	return o
}

// Deployment is the simulated host: it implements remote.Host and
// remote.Simulated.
type Deployment struct {
	opt  Options
	fs   *memFS
	emu  *vllmemu.Emulator
	step *StepModel
	// modelSteps: the emulator steps with the step model (no step times
	// given), so a launch's parallel layout rescales it.
	modelSteps bool
	mux        *http.ServeMux
	srv        *http.Server
	ln         net.Listener
	url        string
	addrPort   string // the port of ServerAddr

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	rng       *rand.Rand
	gpus      []gpuState
	server    *serverProc // the current (or last) server process; nil before the first launch
	nextPID   int
	profiler  bool
	stalls    int // launches that were given a stall
	conns     map[net.Conn]struct{}
	closeOnce sync.Once

	prof     profState // the capture the profiler endpoints hold (profiler.go)
	commands []command // the shell's command table (commands.go)

	procs procTable // the server processes' /proc counters (procfs.go)

	peers []*Deployment // every node of a multi-node deployment (nodes.go), nil for one
	node  nodeState
}

// Start starts the simulated deployment. It runs until ctx ends or Close is
// called. With opt.AutoStart the server starts loading at once.
func Start(ctx context.Context, opt Options) (*Deployment, error) {
	opt = opt.withDefaults()
	switch opt.FailWith {
	case "", "oom", "nccl":
	default:
		return nil, fmt.Errorf("sim: FailWith %q: want \"\", \"oom\" or \"nccl\"", opt.FailWith)
	}
	_, port, err := net.SplitHostPort(opt.ServerAddr)
	if err != nil {
		return nil, fmt.Errorf("sim: ServerAddr %q: %w", opt.ServerAddr, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sim: listen on loopback: %w", err)
	}
	seed := opt.Seed
	if seed == 0 {
		seed = 1
	}
	step := opt.stepModel()
	modelSteps := opt.completeEmulator(step)
	dctx, cancel := context.WithCancel(ctx)
	d := &Deployment{
		opt:        opt,
		fs:         newMemFS(),
		emu:        vllmemu.New(opt.Emulator),
		step:       step,
		modelSteps: modelSteps,
		mux:        http.NewServeMux(),
		ln:         ln,
		url:        "http://" + ln.Addr().String(),
		addrPort:   port,
		ctx:        dctx,
		cancel:     cancel,
		rng:        rand.New(rand.NewSource(seed)),
		nextPID:    2000 + int(seed%50000+50000)%50000,
		conns:      map[net.Conn]struct{}{},
		commands:   commandTable(),
	}
	d.emu.SetReady(false) // not until a server has loaded
	d.initGPUs()
	d.mux.Handle("/", d.emu)
	d.installProfiler()
	d.srv = &http.Server{
		Handler:           d.gate(d.accessLog(d.mux)),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         d.trackConn,
	}
	d.fs.mkdirAll("/var/log/vllm")
	d.fs.mkdirAll("/tmp")
	d.fs.mkdirAll("/root")

	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		_ = d.srv.Serve(ln)
	}()
	go func() {
		defer d.wg.Done()
		d.tickGPUs()
	}()
	// Close everything when the caller's context ends.
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		<-dctx.Done()
		d.shutdownServer()
		d.emu.Close()
	}()
	if opt.AutoStart {
		d.launch(opt.LogPath, false)
	}
	return d, nil
}

// completeEmulator fills the emulator's model and engine from the
// deployment's, and its step times from the step model unless they are
// given; it reports whether it did.
func (opt *Options) completeEmulator(step *StepModel) bool {
	if opt.Emulator.Model == "" {
		opt.Emulator.Model = opt.Model
	}
	if opt.Engine == EngineSGLang {
		opt.Emulator.Engine = vllmemu.EngineSGLang
	}
	if e := opt.Emulator; e.StepFunc == nil && e.StepTime == 0 && e.StepPerSeq == 0 && e.PrefillPerToken == 0 {
		opt.Emulator.StepFunc = step.StepTime
		if opt.Emulator.MaxBatchedTokens == 0 {
			opt.Emulator.MaxBatchedTokens = DefaultMaxBatchedTokens
		}
		return true
	}
	return false
}

// Deployment is a host, and says it is simulated.
var (
	_ remote.Host      = (*Deployment)(nil)
	_ remote.Simulated = (*Deployment)(nil)
)

// Name is "sim", or the node's name in a multi-node deployment.
func (d *Deployment) Name() string {
	if d.opt.NodeName != "" {
		return d.opt.NodeName
	}
	return "sim"
}

// Simulated is always true: every view of this host says SIMULATED.
func (d *Deployment) Simulated() bool { return true }

// Options returns the options in effect (defaults filled in).
func (d *Deployment) Options() Options { return d.opt }

// URL is the real loopback URL of the HTTP server (http://127.0.0.1:PORT),
// for tools outside the host abstraction. Requests to it fail while the
// simulated server process is not running.
func (d *Deployment) URL() string { return d.url }

// Emulator returns the OpenAI-compatible emulator behind the HTTP server.
func (d *Deployment) Emulator() *vllmemu.Emulator { return d.emu }

// Handle adds an HTTP endpoint to the server (e.g. /start_profile).
func (d *Deployment) Handle(pattern string, h http.Handler) { d.mux.Handle(pattern, h) }

// ServerRunning reports whether the simulated vLLM process is running
// (loading or serving).
func (d *Deployment) ServerRunning() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.server != nil && d.server.running
}

// Ready reports whether the server finished loading and serves requests.
func (d *Deployment) Ready() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.server != nil && d.server.running && d.server.stage == phases.StageReady
}

// ProfilerEnabled reports whether the running server was launched with the
// torch profiler (--profiler-config or VLLM_TORCH_PROFILER_DIR=).
func (d *Deployment) ProfilerEnabled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.profiler && d.server != nil && d.server.running
}

// Close stops the server and every goroutine of the deployment.
func (d *Deployment) Close() error {
	d.closeOnce.Do(func() {
		d.cancel()
		d.wg.Wait()
	})
	return nil
}

func (d *Deployment) shutdownServer() {
	d.mu.Lock()
	if s := d.server; s != nil && s.running {
		d.exitLocked(s, phases.StageStopped)
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := d.srv.Shutdown(ctx); err != nil {
		_ = d.srv.Close()
	}
}

// DialContext connects to the simulated server when addr is its address as
// seen from the host (ServerAddr, or localhost with the same port) and the
// server process is running; anything else is refused, as on a real host.
func (d *Deployment) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, fmt.Errorf("sim: dial %s %s: only tcp is simulated", network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	local := host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "0.0.0.0" || host == ""
	if !local || port != d.addrPort || !d.ServerRunning() || d.headless() {
		return nil, refused(network, host, port)
	}
	var dl net.Dialer
	return dl.DialContext(ctx, "tcp", d.ln.Addr().String())
}

// refused is the error a real dial gets from a closed port, so callers can
// test it with errors.Is(err, syscall.ECONNREFUSED).
func refused(network, host, port string) error {
	var a net.Addr
	if ip := net.ParseIP(host); ip != nil {
		p, _ := strconv.Atoi(port)
		a = &net.TCPAddr{IP: ip, Port: p}
	}
	return &net.OpError{Op: "dial", Net: network, Addr: a,
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// gate refuses HTTP requests (by closing the connection) while the server
// process is not running, for clients that use URL() directly.
func (d *Deployment) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.ServerRunning() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.Close()
					return
				}
			}
			http.Error(w, "simulated server is not running", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (d *Deployment) trackConn(c net.Conn, st http.ConnState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch st {
	case http.StateNew:
		d.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(d.conns, c)
	}
}

// dropConns closes every open connection, as a killed server does.
// Called with d.mu held.
func (d *Deployment) dropConnsLocked() {
	for c := range d.conns {
		_ = c.Close()
		delete(d.conns, c)
	}
}

// ReadFile reads a file of the simulated filesystem.
func (d *Deployment) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.fs.read(path)
}

// WriteFile writes a file of the simulated filesystem, creating its parents.
func (d *Deployment) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.fs.write(path, data, mode)
}

// Follow follows a file of the simulated filesystem like tail -F: it waits
// for a missing file, emits complete lines, and emits a Reset event and
// starts over when the file is truncated or replaced (as the server log is on
// every restart).
func (d *Deployment) Follow(ctx context.Context, path string, from int64, out func(remote.FollowEvent)) error {
	return d.fs.follow(ctx, path, from, out)
}

// Run runs a command line on the simulated shell: the rows of its command
// table found by their whole line first, then the command named by its
// first word; anything else exits 127.
func (d *Deployment) Run(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if out == nil {
		out = func(remote.Line) {}
	}
	err := d.dispatch(ctx, cmd, stdin, out)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}
