package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/remote"
)

func TestParseSMIQuery(t *testing.T) {
	out := "NVIDIA H200, 580.105.08, 143771\nNVIDIA H200, 580.105.08, 143771\n\nNVIDIA H100 80GB HBM3, 580.105.08, [N/A]\n"
	g := summarizeGPUs(smi.ParseInfo(out))
	if g.count != 3 || g.name != "NVIDIA H200" || g.driver != "580.105.08" || g.memMiB != 143771 || g.mixed != "2 × NVIDIA H200, 1 × NVIDIA H100 80GB HBM3" {
		t.Fatalf("%+v", g)
	}
	// With a header and units (someone's alias), still read.
	g = summarizeGPUs(smi.ParseInfo("name, driver_version, memory.total [MiB]\nNVIDIA H200, 570.124.06, 143771 MiB\n"))
	if g.count != 1 || g.memMiB != 143771 || g.driver != "570.124.06" {
		t.Fatalf("%+v", g)
	}
	if g := summarizeGPUs(smi.ParseInfo("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")); g.count != 0 {
		t.Fatalf("%+v", g)
	}
}

func TestParseCUDAVersionAndPy(t *testing.T) {
	if v := parseCUDAVersion("| NVIDIA-SMI 580.105.08   Driver Version: 580.105.08     CUDA Version: 13.0     |"); v != "13.0" {
		t.Fatalf("cuda %q", v)
	}
	if v := parseCUDAVersion("CUDA Version                              : 12.8"); v != "12.8" { // nvidia-smi -q
		t.Fatalf("cuda -q %q", v)
	}
	p, err := parsePySysinfo("Warning: something\n" + `{"marker": "profdeck-sysinfo", "torch": "2.9.0", "torch_cuda": "12.9", "vllm_err": "not installed", "config": null}` + "\n")
	if err != nil || p.Torch != "2.9.0" || p.VLLM != "" || p.TorchCUDA != "12.9" || p.Config != nil {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := parsePySysinfo("Traceback (most recent call last):\n"); err == nil {
		t.Fatal("no error for a traceback")
	}
}

func TestModelFromLaunch(t *testing.T) {
	cases := map[string]string{
		"vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8":                "moonshotai/Kimi-K2.5",
		"CUDA_VISIBLE_DEVICES=0 /opt/venv/bin/vllm serve /models/k25 --port 8000": "/models/k25",
		"python3 -m vllm.entrypoints.openai.api_server --model 'org/m' --port 1":  "org/m",
		"python -m vllm.entrypoints.openai.api_server --model=org/m2":             "org/m2",
		"vllm serve --config x.yaml":                                              "",
		"sglang.launch_server --model-path x":                                     "",
	}
	for in, want := range cases {
		if got := ModelFromLaunch(in); got != want {
			t.Errorf("ModelFromLaunch(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSysinfoParsers(f *testing.F) {
	f.Add("NVIDIA H200, 580.105.08, 143771\n| CUDA Version: 13.0 |\n{\"marker\": \"profdeck-sysinfo\", \"torch\": \"2.9\"}")
	f.Add(",,\n, , ,\nname,\n{\"marker\":\"profdeck-sysinfo\",\"config\":[1]}")
	f.Fuzz(func(t *testing.T, out string) {
		g := summarizeGPUs(smi.ParseInfo(out))
		if g.count < 0 || (g.count > 0 && g.name == "") {
			t.Fatalf("%+v", g)
		}
		if v := parseCUDAVersion(out); v != "" && !strings.Contains(out, v) {
			t.Fatal(v)
		}
		parsePySysinfo(out)
		remote.ScrubSecrets(out)
		ModelFromLaunch(out)
	})
}
