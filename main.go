// Command profdeck is a terminal cockpit for profiling LLM serving
// deployments. main only parses the subcommand and wires packages together.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/profdeck/profdeck/phases/macro/kubejob"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/ui"
	"github.com/profdeck/profdeck/ui/headless"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// mainFunc is a command's entry point: its arguments and outputs in, its
// exit status out.
type mainFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

type command struct {
	run  mainFunc
	help string
}

var commands = map[string]command{
	"demo":     {ui.DemoMain, "the cockpit on a built-in simulated 8-GPU deployment, running the campaign by itself (--manual: by hand)"},
	"run":      {headless.RunMain, "run the whole campaign in order, resumably: run [-c FILE] [--phases …] [--redo …] [--json FILE|-]"},
	"tui":      {ui.TUIMain, "run the cockpit for a campaign file: tui [-c profdeck.yaml]"},
	"doctor":   {headless.DoctorMain, "check in seconds everything the campaign needs on its host: doctor [-c FILE] [--host HOST] [--json FILE|-]"},
	"init":     {headless.InitMain, "write a commented example campaign file: init [FILE]"},
	"sweep":    {headless.SweepMain, "headless concurrency sweep against an OpenAI-compatible server"},
	"load":     {headless.LoadMain, "follow a server's weight loading until ready, failed or stalled"},
	"micro":    {headless.MicroMain, "time the model's decode-step GEMMs on the GPU host"},
	"nccl":     {headless.NCCLMain, "time a decode step's collectives on the GPU host"},
	"profile":  {headless.ProfileMain, "capture a torch profile of the serving engine and summarise it"},
	"tail":     {headless.TailMain, "follow a file on a host across reconnects (like tail -F)"},
	"report":   {headless.ReportMain, "render the notebook from a journal: report [JOURNAL | -c FILE] [-o FILE|-]"},
	"explain":  {headless.ExplainMain, "what limited throughput at a sweep's level: explain FILE [--level C]"},
	"capacity": {headless.CapacityMain, "replicas and GPUs for a traffic within the SLO, from a sweep: capacity FILE --rate R | --users N --think-time D"},
	"loadgen":  {headless.LoadgenMain, "the load generator as N agents: loadgen manifest -c FILE --agents N --image IMAGE --coordinator HOST:PORT (a Kubernetes Indexed Job)"},
	"compare":  {headless.CompareMain, "compare two journals or sweep JSON files: compare A B [--json FILE|-]"},
	"parse":    {parseMain, "parse a file: parse " + parserNames("|") + " FILE"},
	"version":  {versionMain, "print the version"},
}

// hidden are commands profdeck runs itself, left out of help: the load
// generator's far end on the GPU host (--loadgen host).
var hidden = map[string]mainFunc{onhost.AgentCommand: agentMain}

// parsers are the formats of `profdeck parse`, in the order help names them.
var parsers = []struct {
	format string
	run    mainFunc
}{
	{"vllm-log", headless.ParseLogMain},
	{"sglang-log", headless.ParseSGLangLogMain},
	{"nvidia-smi", headless.ParseSMIMain},
	{"metrics", headless.ParseMetricsMain},
	{"profiler-table", headless.ParseProfilerMain},
}

// parserNames is the formats joined by sep.
func parserNames(sep string) string {
	names := make([]string, len(parsers))
	for i, p := range parsers {
		names[i] = p.format
	}
	return strings.Join(names, sep)
}

func main() {
	ui.Version = version
	headless.Version = version
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
		usage(stdout)
		return 0
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return ui.TUIMain(ctx, args, stdout, stderr)
	}
	name := args[0]
	if run, ok := hidden[name]; ok {
		return run(ctx, args[1:], stdout, stderr)
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "profdeck: unknown command %q (see profdeck help)\n", name)
		return 2
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func parseMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: profdeck parse "+parserNames("|")+" FILE")
		return 2
	}
	for _, p := range parsers {
		if p.format == args[0] {
			return p.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "profdeck parse: unknown format %q (%s)\n", args[0], parserNames(", "))
	return 2
}

func versionMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, "profdeck", version)
	return 0
}

// agentMain is the load generator's agent. Without arguments it is the
// far end on a host (--loadgen host, the SSH agents): the sweep's
// configuration comes on stdin, its events go out on stdout. With a pod's
// arguments (profdeck loadgen manifest) it is a Kubernetes pod's agent.
func agentMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		return podAgentMain(args, stdout, stderr)
	}
	if err := onhost.Serve(ctx, local.New(), os.Stdin, stdout); err != nil {
		return 1
	}
	return 0
}

// podAgentMain is a pod's agent: its arguments and spec checked as the
// manifest writes them, its share said with --check. Dialing the
// coordinator is planned (docs/scale-out-kubernetes.md).
func podAgentMain(args []string, stdout, stderr io.Writer) int {
	name := "profdeck " + onhost.AgentCommand
	a, err := kubejob.ParseAgentArgs(args)
	var share onhost.Spec
	if err == nil {
		share, err = a.Share()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if !a.Check {
		fmt.Fprintf(stderr, "%s: a pod's agent does not dial %s: the coordinator's side is planned (docs/scale-out-kubernetes.md); %s checks the arguments and the spec\n",
			name, a.Coordinator, kubejob.FlagCheck)
		return 1
	}
	fmt.Fprintf(stdout, "%s: shard %d of %d: levels %v, %d requests, seed %d; coordinator %s\n",
		name, a.Shard, a.Shards, share.Concurrency, share.Requests, share.Seed, a.Coordinator)
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "profdeck — a terminal cockpit for profiling LLM serving deployments")
	fmt.Fprintln(w, "\nusage: profdeck [COMMAND] [FLAGS]   (no command: the cockpit for ./profdeck.yaml)")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].help)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "help", "this text")
	fmt.Fprintln(w, "\nEach command takes -h for its flags.")
}
