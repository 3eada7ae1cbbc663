package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// The simulated driver, as nvidia-smi 580 prints it.
const (
	driverVersion = "580.105.08"
	cudaVersion   = "13.0"
)

// smiArgs are the parsed arguments of an nvidia-smi call.
type smiArgs struct {
	queryGPU  []string
	queryApps []string
	csv       bool
	noheader  bool
	nounits   bool
	ids       []int
	list      bool
	loop      time.Duration
}

func parseSMIArgs(args []string) (smiArgs, error) {
	var a smiArgs
	val := func(i *int, arg, name string) (string, error) {
		if v, ok := strings.CutPrefix(arg, name+"="); ok {
			return v, nil
		}
		if *i+1 >= len(args) {
			return "", fmt.Errorf("option %s needs a value", name)
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, _, _ := strings.Cut(arg, "=")
		var v string
		var err error
		switch name {
		case "--query-gpu", "--query-compute-apps", "--format", "-i", "--id", "-l", "--loop", "-lms", "--loop-ms":
			if v, err = val(&i, arg, name); err != nil {
				return a, err
			}
		}
		switch name {
		case "--query-gpu":
			a.queryGPU = splitFields(v)
		case "--query-compute-apps":
			a.queryApps = splitFields(v)
		case "--format":
			for _, f := range strings.Split(v, ",") {
				switch strings.TrimSpace(f) {
				case "csv":
					a.csv = true
				case "noheader":
					a.noheader = true
				case "nounits":
					a.nounits = true
				default:
					return a, fmt.Errorf("invalid format %q", f)
				}
			}
		case "-i", "--id":
			for _, s := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil {
					return a, fmt.Errorf("invalid GPU id %q", s)
				}
				a.ids = append(a.ids, n)
			}
		case "-l", "--loop", "-lms", "--loop-ms":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return a, fmt.Errorf("invalid loop interval %q", v)
			}
			unit := time.Second
			if name == "-lms" || name == "--loop-ms" {
				unit = time.Millisecond
			}
			a.loop = time.Duration(n) * unit
		case "-L", "--list-gpus":
			a.list = true
		case "-q", "--query":
			return a, fmt.Errorf("-q is not simulated; use --query-gpu")
		default:
			return a, fmt.Errorf("unknown option %q", arg)
		}
	}
	if (a.queryGPU != nil || a.queryApps != nil) && !a.csv {
		return a, fmt.Errorf("--query-gpu needs --format=csv")
	}
	return a, nil
}

func splitFields(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// nvidiaSMI prints what nvidia-smi prints for the simulated GPUs.
func (d *Deployment) nvidiaSMI(ctx context.Context, cmd string, args []string, out func(remote.Line)) error {
	if len(args) > 0 && args[0] == "dmon" {
		return d.dmon(ctx, cmd, args[1:], out)
	}
	if len(args) > 0 && args[0] == "nvlink" {
		return d.nvlinkStatus(cmd, args[1:], out)
	}
	a, err := parseSMIArgs(args)
	if err != nil {
		msg := "Invalid combination of input arguments (" + err.Error() + "). Please run 'nvidia-smi -h' for help."
		Stderr(out, msg)
		return Exit(cmd, 2, msg)
	}
	for _, id := range a.ids {
		if id < 0 || id >= d.opt.GPUs {
			msg := "No devices were found"
			Stderr(out, msg)
			return Exit(cmd, 6, msg)
		}
	}
	for _, f := range a.queryGPU {
		if _, ok := gpuFields[f]; !ok {
			msg := fmt.Sprintf("Field \"%s\" is not a valid field to query.", f)
			Stderr(out, msg)
			return Exit(cmd, 2, msg)
		}
	}
	for _, f := range a.queryApps {
		if _, ok := appFields[f]; !ok {
			msg := fmt.Sprintf("Field \"%s\" is not a valid field to query.", f)
			Stderr(out, msg)
			return Exit(cmd, 2, msg)
		}
	}
	first := true
	for {
		gpus := d.selectGPUs(a.ids)
		switch {
		case a.list:
			for _, g := range gpus {
				Stdout(out, fmt.Sprintf("GPU %d: %s (UUID: %s)", g.Index, g.Name, g.UUID))
			}
		case a.queryGPU != nil:
			if first && !a.noheader {
				Stdout(out, csvHeader(a.queryGPU, gpuFields, a.nounits))
			}
			for _, g := range gpus {
				vals := make([]string, len(a.queryGPU))
				for i, f := range a.queryGPU {
					vals[i] = gpuFields[f].value(d, g, a.nounits)
				}
				Stdout(out, strings.Join(vals, ", "))
			}
		case a.queryApps != nil:
			if first && !a.noheader {
				Stdout(out, csvHeader(a.queryApps, appFields, a.nounits))
			}
			for _, p := range d.computeApps(gpus) {
				vals := make([]string, len(a.queryApps))
				for i, f := range a.queryApps {
					vals[i] = appFields[f].value(d, p, a.nounits)
				}
				Stdout(out, strings.Join(vals, ", "))
			}
		default:
			Stdout(out, d.smiTable(gpus))
		}
		first = false
		if a.loop == 0 {
			return nil
		}
		t := time.NewTimer(a.loop)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (d *Deployment) selectGPUs(ids []int) []GPU {
	all := d.GPUs()
	if len(ids) == 0 {
		return all
	}
	out := make([]GPU, 0, len(ids))
	for _, id := range ids {
		out = append(out, all[id])
	}
	return out
}

// field is one queryable nvidia-smi field: its unit (for the header and the
// value suffix) and how to read it.
type field[T any] struct {
	unit string
	get  func(d *Deployment, x T) string
}

func (f field[T]) value(d *Deployment, x T, nounits bool) string {
	v := f.get(d, x)
	if f.unit != "" && !nounits {
		v += " " + f.unit
	}
	return v
}

func csvHeader[T any](names []string, fields map[string]field[T], nounits bool) string {
	h := make([]string, len(names))
	for i, n := range names {
		h[i] = n
		if u := fields[n].unit; u != "" && !nounits {
			h[i] += " [" + u + "]"
		}
	}
	return strings.Join(h, ", ")
}

var gpuFields = map[string]field[GPU]{
	"index":               {"", func(_ *Deployment, g GPU) string { return strconv.Itoa(g.Index) }},
	"name":                {"", func(_ *Deployment, g GPU) string { return g.Name }},
	"gpu_name":            {"", func(_ *Deployment, g GPU) string { return g.Name }},
	"uuid":                {"", func(_ *Deployment, g GPU) string { return g.UUID }},
	"gpu_uuid":            {"", func(_ *Deployment, g GPU) string { return g.UUID }},
	"pci.bus_id":          {"", func(_ *Deployment, g GPU) string { return g.BusID }},
	"gpu_bus_id":          {"", func(_ *Deployment, g GPU) string { return g.BusID }},
	"driver_version":      {"", func(_ *Deployment, g GPU) string { return driverVersion }},
	"count":               {"", func(d *Deployment, g GPU) string { return strconv.Itoa(d.opt.GPUs) }},
	"memory.used":         {"MiB", func(_ *Deployment, g GPU) string { return strconv.Itoa(g.MemUsedMiB) }},
	"memory.total":        {"MiB", func(_ *Deployment, g GPU) string { return strconv.Itoa(g.MemTotalMiB) }},
	"memory.free":         {"MiB", func(_ *Deployment, g GPU) string { return strconv.Itoa(max(0, g.MemTotalMiB-g.MemUsedMiB-581)) }},
	"memory.reserved":     {"MiB", func(_ *Deployment, g GPU) string { return "581" }},
	"utilization.gpu":     {"%", func(_ *Deployment, g GPU) string { return strconv.Itoa(g.UtilPct) }},
	"utilization.memory":  {"%", func(_ *Deployment, g GPU) string { return strconv.Itoa(g.UtilPct / 4) }},
	"temperature.gpu":     {"", func(_ *Deployment, g GPU) string { return strconv.Itoa(g.TempC) }},
	"power.draw":          {"W", func(_ *Deployment, g GPU) string { return fmt.Sprintf("%.2f", g.PowerW) }},
	"power.limit":         {"W", func(_ *Deployment, g GPU) string { return "700.00" }},
	"pstate":              {"", func(_ *Deployment, g GPU) string { return "P0" }},
	"pcie.link.gen.max":   {"", func(_ *Deployment, g GPU) string { return "5" }},
	"pcie.link.width.max": {"", func(_ *Deployment, g GPU) string { return "16" }},
	"timestamp": {"", func(_ *Deployment, g GPU) string {
		return time.Now().UTC().Format("2006/01/02 15:04:05.000")
	}},
}

// computeApp is one process on one GPU.
type computeApp struct {
	gpu     GPU
	pid     int
	name    string
	usedMiB int
}

var appFields = map[string]field[computeApp]{
	"pid":          {"", func(_ *Deployment, p computeApp) string { return strconv.Itoa(p.pid) }},
	"process_name": {"", func(_ *Deployment, p computeApp) string { return p.name }},
	"name":         {"", func(_ *Deployment, p computeApp) string { return p.name }},
	"used_memory":  {"MiB", func(_ *Deployment, p computeApp) string { return strconv.Itoa(p.usedMiB) }},
	"gpu_uuid":     {"", func(_ *Deployment, p computeApp) string { return p.gpu.UUID }},
	"gpu_bus_id":   {"", func(_ *Deployment, p computeApp) string { return p.gpu.BusID }},
}

// computeApps lists the server's worker processes on the given GPUs, and
// the other users' processes (Options.Others) on them.
func (d *Deployment) computeApps(gpus []GPU) []computeApp {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.server
	var out []computeApp
	for _, g := range gpus {
		if s != nil && s.running && g.MemUsedMiB > 0 && g.Index < len(s.workerPIDs) {
			out = append(out, computeApp{gpu: g, pid: s.workerPIDs[g.Index],
				name: fmt.Sprintf("VLLM::Worker_TP%d", g.Index), usedMiB: max(0, g.MemUsedMiB-8)})
		}
		for _, o := range d.opt.Others {
			if o.GPU == g.Index {
				out = append(out, computeApp{gpu: g, pid: o.PID, name: strings.Fields(o.Command + " ?")[0], usedMiB: o.MiB})
			}
		}
	}
	return out
}

const (
	smiSep    = "+-----------------------------------------+------------------------+----------------------+"
	smiRule   = "+-----------------------------------------------------------------------------------------+"
	smiBlank  = "|                                         |                        |                      |"
	smiHeader = `| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|`
	smiProcHeader = `+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|`
)

// smiTable is nvidia-smi's default table (driver 580 layout), with a last
// line saying it is simulated.
func (d *Deployment) smiTable(gpus []GPU) string {
	var b strings.Builder
	line := func(s string) { b.WriteString(s); b.WriteByte('\n') }
	line(time.Now().UTC().Format("Mon Jan _2 15:04:05 2006") + "       ")
	line(smiRule)
	line(fmt.Sprintf("| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %-8s |", driverVersion, driverVersion, cudaVersion))
	line(smiSep)
	line(smiHeader)
	for _, g := range gpus {
		name := g.Name
		if len(name) > 27 {
			name = name[:24] + "..."
		}
		line(fmt.Sprintf("|%4d  %-31s%-4s|   %s %-4s|%21s |", g.Index, name, "On", g.BusID, "Off", "0"))
		line(fmt.Sprintf("| N/A%6s%6s%16s / %5s |%11s / %9s |%8s%13s |",
			strconv.Itoa(g.TempC)+"C", "P0", fmt.Sprintf("%.0fW", g.PowerW), "700W",
			strconv.Itoa(g.MemUsedMiB)+"MiB", strconv.Itoa(g.MemTotalMiB)+"MiB", strconv.Itoa(g.UtilPct)+"%", "Default"))
		line(fmt.Sprintf("|%41s|%24s|%21s |", "", "", "Disabled"))
		line(smiSep)
	}
	line("")
	line(smiProcHeader)
	apps := d.computeApps(gpus)
	if len(apps) == 0 {
		line("|  No running processes found                                                             |")
	}
	for _, p := range apps {
		mem := strconv.Itoa(p.usedMiB) + "MiB"
		if len(mem) > 8 {
			mem = mem[:5] + "..."
		}
		line(fmt.Sprintf("|  %3d   N/A  N/A  %14d      C   %-34s%12s |", p.gpu.Index, p.pid, p.name, mem))
	}
	line(smiRule)
	b.WriteString("SIMULATED nvidia-smi: profdeck demo deployment, no real GPU")
	return b.String()
}
