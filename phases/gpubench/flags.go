// Package gpubench is what the micro and nccl GPU benchmarks share: the
// flags (the campaign file, the host, the model and its parallelism, the
// batch sizes and where JSON goes), the decode-step plan they time and the
// headless run that prints their results.
package gpubench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/report/campaign"
)

// Common are the shared flags.
type Common struct {
	Campaign string
	Host     string
	Model    string
	TP       int
	EP       bool
	Batch    IntList
	JSON     string
	WorkDir  string
	Force    bool
	NoEmbed  bool
	DryRun   bool
	Lines    string // a file for the script's raw JSON lines

	name string // the command, for messages (set by FlagSet)
}

// IntList is a comma-separated list of positive integers.
type IntList []int

// String writes the list back comma-separated (flag.Value).
func (l *IntList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// Set parses "1,8,64".
func (l *IntList) Set(v string) error {
	out, err := ParseInts(v)
	if err != nil {
		return err
	}
	*l = out
	return nil
}

// ParseInts parses a comma-separated list of positive integers.
func ParseInts(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// Register adds the shared flags to fs.
func (c *Common) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Campaign, "c", "", "campaign file (profdeck.yaml) for host, model and phase defaults")
	fs.StringVar(&c.Host, "host", "", "host: sim, local or an SSH target (default: the campaign's, else local)")
	fs.StringVar(&c.Model, "model-config", "", "model: a preset ("+strings.Join(model.PresetNames(), ", ")+") or a config.json (local, or a path on the host)")
	fs.IntVar(&c.TP, "tp", 0, "tensor-parallel size (default: the campaign's, else 8)")
	fs.BoolVar(&c.EP, "ep", false, "expert parallelism (vLLM --enable-expert-parallel)")
	fs.Var(&c.Batch, "batch", "batch sizes M, comma-separated (default 1,8,64,128)")
	fs.StringVar(&c.JSON, "json", "", "write the results as JSON to FILE (- for stdout)")
	fs.StringVar(&c.WorkDir, "workdir", "/tmp/profdeck", "work dir on the host for the uploaded script")
	fs.BoolVar(&c.Force, "force", false, "run even when nvidia-smi shows the GPUs busy")
	fs.BoolVar(&c.NoEmbed, "no-embed-allreduce", false, "the server does no all-reduce for the input embedding")
	fs.BoolVar(&c.DryRun, "dry-run", false, "print the decode-step plan as JSON and exit (no GPU needed)")
	fs.StringVar(&c.Lines, "lines", "", "also write the script's raw JSON lines to FILE")
}

// FlagSet is the flag set of the command name, with the shared flags in c;
// its help starts with the usage line.
func (c *Common) FlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	c.name = name
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args into fs and resolves the flags with the campaign
// (section picks the phase's batch sizes). When ok is false the error is
// said on stderr and the command exits with status 2.
func (c *Common) Parse(fs *flag.FlagSet, args []string, section func(*campaign.Campaign) []int, stderr io.Writer) (res *Resolved, ok bool) {
	if err := fs.Parse(args); err != nil {
		return nil, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "profdeck %s: unexpected argument %q\n", c.name, fs.Arg(0))
		return nil, false
	}
	res, err := c.Resolve(section)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck %s: %v\n", c.name, err)
		return nil, false
	}
	return res, true
}

// Resolved is the flags merged with the campaign file.
type Resolved struct {
	Campaign *campaign.Campaign
	HostSpec string
}

// Resolve reads the campaign file (if any) and fills unset flags from it.
// section picks the campaign's batch list for this phase.
func (c *Common) Resolve(section func(*campaign.Campaign) []int) (*Resolved, error) {
	camp := campaign.Defaults()
	if c.Campaign != "" {
		var err error
		if camp, err = campaign.LoadFile(c.Campaign); err != nil {
			return nil, err
		}
	}
	r := &Resolved{Campaign: camp, HostSpec: c.Host}
	if r.HostSpec == "" {
		r.HostSpec = camp.Host
	}
	if r.HostSpec == "" {
		r.HostSpec = "local"
	}
	if c.Model == "" && c.Campaign != "" {
		c.Model, _ = model.Spec(camp.Model.Config, camp.Model.Preset, camp.Model.Name)
	}
	if c.TP == 0 {
		c.TP = camp.Model.TP
	}
	if c.TP == 0 {
		c.TP = 8
	}
	if !c.EP {
		c.EP = camp.Model.EP
	}
	if len(c.Batch) == 0 && section != nil {
		c.Batch = section(camp)
	}
	if len(c.Batch) == 0 {
		c.Batch = model.DefaultBatch
	}
	if c.Model == "" {
		return nil, fmt.Errorf("no model: give --model-config PRESET|FILE (presets: %s)", strings.Join(model.PresetNames(), ", "))
	}
	return r, nil
}

// OpenHost opens the resolved host with the campaign's SSH settings.
func (r *Resolved) OpenHost(ctx context.Context) (remote.Host, error) {
	s := r.Campaign.SSH
	return hosts.Open(ctx, r.HostSpec, hosts.Options{Identity: s.Identity, KnownHosts: s.KnownHosts,
		SSHConfig: s.Config, AcceptNewHostKey: s.AcceptNewHostKey})
}

// Plan resolves the model (h may be nil: then only presets and local files)
// and builds the plan.
func (c *Common) Plan(ctx context.Context, h remote.Host) (model.Plan, error) {
	cfg, err := model.Resolve(ctx, h, c.Model)
	if err != nil {
		return model.Plan{}, err
	}
	return model.Build(cfg, model.Options{TP: c.TP, EP: c.EP, Batch: c.Batch, NoEmbeddingAllReduce: c.NoEmbed})
}

// WriteJSON writes v as indented JSON to path ("-" for stdout).
func WriteJSON(path string, stdout io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
