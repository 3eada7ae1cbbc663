package vllmlog

import (
	"regexp"
	"strconv"
	"strings"
)

// Setup is what one line says of the deployment: its platform, driver and
// toolkit versions, quantization and parallel sizes. Unsaid fields are
// zero; a record carries one only when its line says something.
type Setup struct {
	Platform string
	// PlatformSure is true when the line names the platform outright
	// ("Automatically detected platform rocm", device_config=npu) rather
	// than through one of its errors or files (a HIP error, vllm_ascend).
	PlatformSure bool
	Driver       string // the GPU driver's version
	CUDA         string
	ROCm         string
	// Built is true when the versions are those torch was built with
	// (a runtime's own version says more).
	Built bool
	// cudaBuilt and rocmBuilt mark merged versions read from a build line.
	cudaBuilt, rocmBuilt bool
	Quantization         string
	// TP, PP, DP and EP are the parallel sizes a config or args line
	// states, 0 when unsaid.
	TP, PP, DP, EP int
	DPAttention    int8   // 1 on, -1 off, 0 unsaid
	CUDAGraphs     int8   // 1 on, -1 off (SGLang's disable_cuda_graph, vLLM's enforce-eager), 0 unsaid
	PDRole         string // SGLang's disaggregation mode: "prefill" or "decode"
}

// maxSetupValue bounds a version or method name kept from a line.
const maxSetupValue = 48

var (
	platformRe = regexp.MustCompile(`Automatically detected platform (\w+)|[\s,(]device_config=(\w+)|[\s,(]device='(\w+)'|Platform plugin (\w+) is activated|device type=(\w+) is not supported`)
	quantRe    = regexp.MustCompile(`(?:^|[\s,({])'?quantization'?(?:=|: )'?([\w.-]+)`)
	sizeRe     = regexp.MustCompile(`(?:^|[\s,({])'?(tensor_parallel_size|pipeline_parallel_size|data_parallel_size|tp_size|pp_size|dp_size|ep_size|expert_parallel_size)'?(?:=|: )(\d{1,6})\b`)
	eagerRe    = regexp.MustCompile(`(?:^|[\s,(])enforce_eager=(?:True|true)\b`)
	flagRe     = regexp.MustCompile(`(?:^|[\s,(])(enable_dp_attention|disable_cuda_graph)=(True|False)|(?:^|[\s,(])disaggregation_mode='(\w+)'`)
	// Versions from the environment report pasted with a log
	// (collect_env), NCCL's and RCCL's banners, nvidia-smi's header.
	versionLineRe = regexp.MustCompile(`^(?:Nvidia driver version|NVIDIA driver version|HPU driver version|Driver Version|CUDA runtime version|HIP runtime version|ROCM Version|ROCm version|CUDA used to build PyTorch|ROCM used to build PyTorch)\s*:\s*([\w.+-]+)|(?:NCCL|RCCL) version [\d.]+\+(cuda|hip)([\d.]+)`)
)

// setupNeedles: a line that says anything readSetup reads contains one.
var setupNeedles = []string{"platform", "Platform", "device", "enforce_eager", "CUDAGraphs", "torch.npu", "hccl", "quantization", "BitsAndBytes", "bitsandbytes", "_size", "parallel_size",
	"dp_attention", "DP attention", "cuda_graph", "disaggregation_mode", "version", "Version", "used to build",
	"NPU", "npu", "HIP", "hip", "CUDA out of memory", "vllm_ascend", "XPU", "TPU", "tpu_"}

// readSetup fills r.Setup from what its line says of the deployment.
func readSetup(r *Record) {
	msg := r.Msg
	if strings.HasPrefix(r.File, "tpu_") {
		// TPU's own worker and runner files.
		r.Setup = &Setup{Platform: "tpu"}
	}
	if !containsAny(msg, setupNeedles) {
		return
	}
	var s Setup
	platformOf(&s, msg)
	versionsOf(&s, msg)
	if m := quantRe.FindStringSubmatch(msg); m != nil && m[1] != "None" && m[1] != "none" {
		s.Quantization = bound(m[1])
	} else if strings.Contains(msg, "BitsAndBytes quantization") || strings.Contains(msg, "bitsandbytes quantization is not") {
		s.Quantization = "bitsandbytes"
	}
	sizesOf(&s, msg)
	flagsOf(&s, msg)
	if s != (Setup{}) {
		if r.Setup != nil && s.Platform == "" {
			s.Platform = r.Setup.Platform
		}
		r.Setup = &s
	}
}

// platformOf reads the platform a line names, or the one its error or
// module belongs to.
func platformOf(s *Setup, msg string) {
	if m := platformRe.FindStringSubmatch(msg); m != nil {
		if p := platformName(m[1] + m[2] + m[3] + m[4] + m[5]); p != "" {
			s.Platform, s.PlatformSure = p, true
			return
		}
	}
	switch {
	case strings.Contains(msg, "Confirmed CUDA platform is available"), strings.Contains(msg, "CUDA out of memory"):
		s.Platform = "cuda"
	case strings.Contains(msg, "HIP error"), strings.Contains(msg, "HIP out of memory"), strings.Contains(msg, "hipError"):
		s.Platform = "rocm"
	case strings.Contains(msg, "NPU out of memory"), strings.Contains(msg, "/vllm_ascend/"), strings.Contains(msg, "Capture npu graph"),
		strings.Contains(msg, "replaced with torch.npu"), strings.Contains(msg, "init_process_group set to hccl"):
		s.Platform = "npu"
	case strings.Contains(msg, "not supported on XPU"):
		s.Platform = "xpu"
	case strings.Contains(msg, "# TPU blocks"), strings.Contains(msg, "tpu_worker"), strings.Contains(msg, "tpu_model_runner"):
		s.Platform = "tpu"
	}
}

// platformName maps a platform or device name to the platform's.
func platformName(n string) string {
	switch strings.ToLower(n) {
	case "cuda", "gpu":
		return "cuda"
	case "rocm", "hip":
		return "rocm"
	case "npu", "ascend":
		return "npu"
	case "tpu", "xpu", "cpu", "hpu", "neuron":
		return strings.ToLower(n)
	}
	return ""
}

func versionsOf(s *Setup, msg string) {
	m := versionLineRe.FindStringSubmatch(strings.TrimSpace(msg))
	if m == nil {
		return
	}
	if m[2] != "" {
		if m[2] == "cuda" {
			s.CUDA = bound(m[3])
		} else {
			s.ROCm = bound(m[3])
		}
		return
	}
	v := m[1]
	s.Built = strings.Contains(msg, "used to build")
	if v == "" || v == "N/A" || v == "None" || v == "Could" || v == "No" {
		return
	}
	switch key := strings.ToLower(msg); {
	case strings.Contains(key, "driver"):
		s.Driver = bound(v)
	case strings.Contains(key, "rocm"), strings.Contains(key, "hip"):
		s.ROCm = bound(v)
	default:
		s.CUDA = bound(v)
	}
}

func sizesOf(s *Setup, msg string) {
	if !strings.Contains(msg, "_size") {
		return
	}
	for _, m := range sizeRe.FindAllStringSubmatch(msg, 16) {
		n, err := strconv.Atoi(m[2])
		if err != nil || n <= 0 {
			continue
		}
		switch m[1] {
		case "tensor_parallel_size", "tp_size":
			s.TP = n
		case "pipeline_parallel_size", "pp_size":
			s.PP = n
		case "data_parallel_size", "dp_size":
			s.DP = n
		case "ep_size", "expert_parallel_size":
			s.EP = n
		}
	}
}

func flagsOf(s *Setup, msg string) {
	if strings.Contains(msg, "DP attention is enabled") {
		s.DPAttention = 1
	}
	if strings.Contains(msg, "disabling torch.compile and CUDAGraphs") || eagerRe.MatchString(msg) {
		s.CUDAGraphs = -1 // vLLM's enforce-eager: no graphs
	}
	for _, m := range flagRe.FindAllStringSubmatch(msg, 4) {
		on := int8(1)
		if m[2] == "False" {
			on = -1
		}
		switch {
		case m[1] == "enable_dp_attention":
			s.DPAttention = on
		case m[1] == "disable_cuda_graph":
			s.CUDAGraphs = -on
		case m[3] == "prefill" || m[3] == "decode":
			s.PDRole = m[3]
		}
	}
}

func bound(v string) string {
	if len(v) > maxSetupValue {
		return v[:maxSetupValue]
	}
	return v
}
