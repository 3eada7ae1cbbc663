package phases

import (
	"fmt"
	"time"
)

// GPU telemetry during the sweep: one sampler per host (phases/gputel).
const (
	KindMacroGPU       = "macro.gpu"        // one sampling round of every GPU on a host (ephemeral)
	KindMacroGPUSource = "macro.gpu_source" // what the sampler reads and what the host lacks, said once
)

// GPUTel is one GPU's reading in a sampling round. A nil value is one the
// host's counters do not give.
type GPUTel struct {
	Index      int      `json:"index"`
	UtilPct    *float64 `json:"sm_util_pct,omitempty"`
	MemUsedMiB *float64 `json:"memory_used_mib,omitempty"`
	PowerW     *float64 `json:"power_w,omitempty"`
	// EnergyJ is the driver's energy counter (since it loaded), when the
	// source reads one.
	EnergyJ    *float64 `json:"energy_j,omitempty"`
	SMClockMHz *float64 `json:"sm_clock_mhz,omitempty"`
	// The shares of the interval the clocks were held down by the power
	// cap and by temperature (nvidia-smi dmon's pviol and tviol).
	PowerViolPct   *float64 `json:"power_violation_pct,omitempty"`
	ThermalViolPct *float64 `json:"thermal_violation_pct,omitempty"`
	PCIeRxGBs      *float64 `json:"pcie_rx_gbs,omitempty"`
	PCIeTxGBs      *float64 `json:"pcie_tx_gbs,omitempty"`
	NVLinkRxGBs    *float64 `json:"nvlink_rx_gbs,omitempty"`
	NVLinkTxGBs    *float64 `json:"nvlink_tx_gbs,omitempty"`
}

// GPUTelSample is one sampling round of a host's GPUs.
type GPUTelSample struct {
	Host string    `json:"host"`
	At   time.Time `json:"t"`
	GPUs []GPUTel  `json:"gpus"`
}

// GPUTelSource says what a host's sampler reads: the source ("nvidia-smi
// dmon", "dcgmi dmon", or "" when there is none), the command, whether
// NVLink traffic is measured, each GPU's NVLink peak (GB/s per direction,
// the sum of its active links) and what the host lacks.
type GPUTelSource struct {
	Host          string  `json:"host"`
	Source        string  `json:"source"`
	Command       string  `json:"command,omitempty"`
	GPUs          int     `json:"gpus"`
	NVLink        bool    `json:"nvlink"`
	NVLinkPeakGBs float64 `json:"nvlink_peak_gbs,omitempty"`
	// Energy is "counter" (the driver's energy counter) or
	// "power_integral" (mean sampled power × time, an estimate).
	Energy string   `json:"energy,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// GPULevel is the GPUs over one level's throughput window, every GPU of
// the host together where a figure is a sum.
type GPULevel struct {
	Source  string    `json:"source"`
	GPUs    int       `json:"gpus"`
	Samples int       `json:"samples"` // sampling rounds in the window
	Start   time.Time `json:"start"`   // the window's start
	WindowS float64   `json:"window_s"`
	// Power of all GPUs together: the mean over the window, the largest
	// round.
	MeanPowerW float64 `json:"mean_power_w"`
	PeakPowerW float64 `json:"peak_power_w"`
	// SM utilisation, the mean over GPUs: mean and peak round.
	MeanUtilPct float64 `json:"mean_sm_util_pct"`
	PeakUtilPct float64 `json:"peak_sm_util_pct"`
	// The SM clock over GPUs and rounds.
	MeanSMClockMHz float64 `json:"mean_sm_clock_mhz"`
	MinSMClockMHz  float64 `json:"min_sm_clock_mhz"`
	PeakSMClockMHz float64 `json:"peak_sm_clock_mhz"`
	// Throttling: the mean share of time the clocks were held down by
	// power and by temperature; Throttle names it when it passed 5%.
	PowerThrottlePct   float64 `json:"power_throttle_pct"`
	ThermalThrottlePct float64 `json:"thermal_throttle_pct"`
	Throttle           string  `json:"throttle,omitempty"`
	// EnergyJ over the window (all GPUs), how it was had, and per output
	// token received in the window.
	EnergyJ         float64 `json:"energy_j"`
	EnergySource    string  `json:"energy_source"`
	JPerOutputToken float64 `json:"j_per_output_token,omitempty"`
	// Link traffic, receive plus transmit, all GPUs, the mean over the
	// window; NVLink nil when it is not measured.
	PCIeGBs   *float64 `json:"pcie_gbs,omitempty"`
	NVLinkGBs *float64 `json:"nvlink_gbs,omitempty"`
	Note      string   `json:"note,omitempty"`
	// NoReadings is a window whose samples held no power, SM or clock
	// value (nvidia-smi printed "-" for all): its figures are unknown,
	// not 0 (Note says so).
	NoReadings bool `json:"no_readings,omitempty"`
}

func init() {
	Register(KindMacroGPU, Macro, GPUTelSample{}, true)
	Register(KindMacroGPUSource, Macro, GPUTelSource{}, false)
}

// PowerText is the level's power, written one way wherever it shows (the
// run's stderr, the notebook, the Macro pane): the mean of all GPUs
// together and per GPU, then the peak, e.g. "3848 W mean total, 481 W per
// GPU (peak 3886 W total)".
func (g *GPULevel) PowerText() string {
	return fmt.Sprintf("%s (peak %.0f W total)", PowerMean(g.MeanPowerW, g.GPUs), g.PeakPowerW)
}

// PowerMean is a mean power of gpus GPUs together and per GPU: "3848 W
// mean total, 481 W per GPU" (the total alone when the count is unknown).
func PowerMean(totalW float64, gpus int) string {
	if gpus <= 0 {
		return fmt.Sprintf("%.0f W mean total", totalW)
	}
	return fmt.Sprintf("%.0f W mean total, %.0f W per GPU", totalW, totalW/float64(gpus))
}

// Line is the level's GPUs in one line: power, utilisation, clocks,
// throttling, energy per output token and link traffic.
func (g *GPULevel) Line() string {
	if g == nil {
		return ""
	}
	if g.Samples == 0 || g.NoReadings {
		return "GPU: " + g.Note
	}
	s := fmt.Sprintf("GPU: power %s, SM %.0f%% (peak %.0f%%), clock %.0f MHz (min %.0f)",
		g.PowerText(), g.MeanUtilPct, g.PeakUtilPct, g.MeanSMClockMHz, g.MinSMClockMHz)
	if g.Throttle != "" {
		s += fmt.Sprintf(", %s-throttled (power %.0f%%, thermal %.0f%% of the time)", g.Throttle, g.PowerThrottlePct, g.ThermalThrottlePct)
	}
	if g.JPerOutputToken > 0 {
		s += fmt.Sprintf(", %.3g J/token", g.JPerOutputToken)
	}
	if g.NVLinkGBs != nil {
		s += fmt.Sprintf(", NVLink %.3g GB/s", *g.NVLinkGBs)
	}
	if g.PCIeGBs != nil {
		s += fmt.Sprintf(", PCIe %.3g GB/s", *g.PCIeGBs)
	}
	if g.Note != "" {
		s += " (" + g.Note + ")"
	}
	return s
}

// KindNCCLLink is the interconnect the NCCL phase's collectives ran over.
const KindNCCLLink = "nccl.link"

// NCCLLink is a GPU's interconnect and its peak, GB/s in each direction:
// NVLink (the sum of its active links' speeds) or PCIe (generation and
// width).
type NCCLLink struct {
	Kind   string  `json:"kind"` // "NVLink" or "PCIe"
	Detail string  `json:"detail,omitempty"`
	PeakGB float64 `json:"peak_gbs"`
}

func init() { Register(KindNCCLLink, NCCL, NCCLLink{}, false) }
