package gputel

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/remote"
)

// pcieQuery asks for each GPU's PCIe generation and width: the most the
// GPU and the system allow (the current ones drop at idle).
const pcieQuery = "nvidia-smi --query-gpu=index,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader,nounits"

// LinkPeak reads the interconnect of h's GPUs: NVLink when a GPU has
// active links (the largest sum of link speeds), else PCIe from the
// generation and width. ok is false when neither could be read.
func LinkPeak(ctx context.Context, h remote.Host) (phases.NCCLLink, bool) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if text, err := remote.Output(ctx, h, "nvidia-smi nvlink -s"); err == nil {
		best, links := 0.0, 0
		for _, l := range smi.NVLinkStatus(text) {
			sum := 0.0
			for _, v := range l {
				sum += v
			}
			if sum > best {
				best, links = sum, len(l)
			}
		}
		if best > 0 {
			return phases.NCCLLink{Kind: "NVLink", PeakGB: best, Detail: fmt.Sprintf("%d links (nvidia-smi nvlink -s)", links)}, true
		}
	}
	text, err := remote.Output(ctx, h, pcieQuery)
	if err != nil {
		return phases.NCCLLink{}, false
	}
	return pciePeak(text)
}

// pciePeak reads pcieQuery's answer: the first GPU with both figures.
func pciePeak(text string) (phases.NCCLLink, bool) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			continue
		}
		gen, err1 := strconv.Atoi(strings.TrimSpace(f[1]))
		width, err2 := strconv.Atoi(strings.TrimSpace(f[2]))
		if err1 != nil || err2 != nil || width < 1 || width > 32 {
			continue
		}
		gts, enc := 0.0, 128.0/130
		switch gen {
		case 1, 2:
			gts, enc = 2.5*float64(gen), 0.8
		case 3:
			gts = 8
		case 4:
			gts = 16
		case 5:
			gts = 32
		case 6:
			gts = 64
		default:
			continue
		}
		return phases.NCCLLink{Kind: "PCIe", PeakGB: gts * float64(width) * enc / 8,
			Detail: fmt.Sprintf("Gen%d x%d (nvidia-smi pcie.link.gen.max, width.max)", gen, width)}, true
	}
	return phases.NCCLLink{}, false
}
