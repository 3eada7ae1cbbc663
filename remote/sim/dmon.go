package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// dmonGroups are nvidia-smi dmon's -s groups and their columns (name,
// unit), as driver 580 prints them.
var dmonGroups = map[byte][][2]string{
	'p': {{"pwr", "W"}, {"gtemp", "C"}, {"mtemp", "C"}},
	'u': {{"sm", "%"}, {"mem", "%"}, {"enc", "%"}, {"dec", "%"}, {"jpg", "%"}, {"ofa", "%"}},
	'c': {{"mclk", "MHz"}, {"pclk", "MHz"}},
	'v': {{"pviol", "%"}, {"tviol", "bool"}},
	'm': {{"fb", "MB"}, {"bar1", "MB"}, {"ccpm", "MB"}},
	'e': {{"sbecc", "errs"}, {"dbecc", "errs"}, {"pci", "errs"}},
	't': {{"rxpci", "MB/s"}, {"txpci", "MB/s"}},
}

// gpmColumns are the GPM metrics the simulation knows.
var gpmColumns = map[string][2]string{"60": {"nvlrx", "GPM:MiB/s"}, "61": {"nvltx", "GPM:MiB/s"}}

// dmonArgs are the parsed arguments of `nvidia-smi dmon`.
type dmonArgs struct {
	cols  [][2]string
	every time.Duration
	count int
	ids   []int
	gpm   bool
}

func parseDmonArgs(args []string) (dmonArgs, error) {
	a := dmonArgs{every: time.Second}
	groups := "puc"
	var gpm []string
	for i := 0; i < len(args); i++ {
		name, v, hasV := strings.Cut(args[i], "=")
		if !hasV && i+1 < len(args) && name != "" {
			v = args[i+1]
		}
		step := 1
		if hasV {
			step = 0
		}
		switch name {
		case "-s":
			groups = v
		case "-d":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return a, fmt.Errorf("invalid delay %q", v)
			}
			a.every = time.Duration(n) * time.Second
		case "-c":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return a, fmt.Errorf("invalid count %q", v)
			}
			a.count = n
		case "-i":
			for _, s := range strings.Split(v, ",") {
				n, err := strconv.Atoi(s)
				if err != nil {
					return a, fmt.Errorf("invalid GPU id %q", s)
				}
				a.ids = append(a.ids, n)
			}
		case "--gpm-metrics":
			gpm = strings.Split(v, ",")
		default:
			return a, fmt.Errorf("unknown option %q", args[i])
		}
		i += step
	}
	for i := range len(groups) {
		g, ok := dmonGroups[groups[i]]
		if !ok {
			return a, fmt.Errorf("invalid -s group %q", groups[i:i+1])
		}
		a.cols = append(a.cols, g...)
	}
	for _, m := range gpm {
		c, ok := gpmColumns[m]
		if !ok {
			return a, fmt.Errorf("GPM metric %s is not simulated", m)
		}
		a.cols, a.gpm = append(a.cols, c), true
	}
	return a, nil
}

// dmon prints `nvidia-smi dmon` rows for the simulated GPUs: the two
// header lines, then one row per GPU per interval. GPM values read "-" on
// the first round, as the real one's do.
func (d *Deployment) dmon(ctx context.Context, cmd string, args []string, out func(remote.Line)) error {
	a, err := parseDmonArgs(args)
	if err == nil && a.gpm && d.opt.NoGPM {
		err = fmt.Errorf("GPM metrics are not supported on this GPU")
	}
	if err != nil {
		msg := "Invalid combination of input arguments (" + err.Error() + "). Please run 'nvidia-smi dmon -h' for help."
		Stderr(out, msg)
		return Exit(cmd, 2, msg)
	}
	names, units := []string{"# gpu"}, []string{"# Idx"}
	for _, c := range a.cols {
		w := max(6, len(c[0]), len(c[1]))
		names = append(names, fmt.Sprintf("%*s", w, c[0]))
		units = append(units, fmt.Sprintf("%*s", w, c[1]))
	}
	Stdout(out, strings.Join(names, " "))
	Stdout(out, strings.Join(units, " "))
	for n := 0; a.count == 0 || n < a.count; n++ {
		if n > 0 {
			t := time.NewTimer(a.every)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		for _, g := range d.selectGPUs(a.ids) {
			row := []string{fmt.Sprintf("%5d", g.Index)}
			for _, c := range a.cols {
				v := g.dmonValue(c[0])
				if n == 0 && strings.HasPrefix(c[1], "GPM") {
					v = "-"
				}
				row = append(row, fmt.Sprintf("%*s", max(6, len(c[0]), len(c[1])), v))
			}
			Stdout(out, strings.Join(row, " "))
		}
	}
	return nil
}

// dmonValue is one column of a GPU's dmon row.
func (g GPU) dmonValue(col string) string {
	i := func(v float64) string { return strconv.Itoa(int(v + 0.5)) }
	switch col {
	case "pwr":
		return i(g.PowerW)
	case "gtemp":
		return strconv.Itoa(g.TempC)
	case "mtemp":
		return strconv.Itoa(g.TempC + 4)
	case "sm":
		return strconv.Itoa(g.UtilPct)
	case "mem":
		return strconv.Itoa(g.UtilPct / 4)
	case "mclk":
		return "3201"
	case "pclk":
		return i(g.SMClockMHz)
	case "pviol":
		return i(g.PowerViolPct)
	case "fb":
		return strconv.Itoa(g.MemUsedMiB)
	case "bar1":
		return "5"
	case "rxpci":
		return i(g.PCIeRxMBs)
	case "txpci":
		return i(g.PCIeTxMBs)
	case "nvlrx":
		return i(g.NVLinkRxMiBs)
	case "nvltx":
		return i(g.NVLinkTxMiBs)
	}
	return "0"
}

// nvlinkLinks is how many NVLink links a simulated H200 SXM has, and their
// speed.
const (
	nvlinkLinks = 18
	nvlinkGBs   = 26.562
)

// nvlinkStatus prints `nvidia-smi nvlink -s`.
func (d *Deployment) nvlinkStatus(cmd string, args []string, out func(remote.Line)) error {
	if len(args) != 1 || (args[0] != "-s" && args[0] != "--status") {
		msg := "only `nvidia-smi nvlink -s` is simulated"
		Stderr(out, msg)
		return Exit(cmd, 2, msg)
	}
	for _, g := range d.GPUs() {
		Stdout(out, fmt.Sprintf("GPU %d: %s (UUID: %s)", g.Index, g.Name, g.UUID))
		if d.opt.NoNVLink {
			continue
		}
		for l := range nvlinkLinks {
			Stdout(out, fmt.Sprintf("\t Link %d: %.3f GB/s", l, nvlinkGBs))
		}
	}
	return nil
}
