package campaign

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/phases/model"
	"gopkg.in/yaml.v3"
)

// lineOf finds the line of a dotted key ("macro.concurrency") in the parsed
// document, or 0 when it is not there.
func lineOf(root *yaml.Node, key string) int {
	n := root
	if n == nil {
		return 0
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(key, ".") {
		if n == nil || n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				line = n.Content[i].Line
				next = n.Content[i+1]
				break
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return line
}

func (c *Campaign) validate(root *yaml.Node) error {
	bad := func(key, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if l := lineOf(root, key); l > 0 {
			return fmt.Errorf("line %d: %s: %s", l, key, msg)
		}
		return fmt.Errorf("%s: %s", key, msg)
	}
	if err := c.validateHosts(root, bad); err != nil {
		return err
	}
	if c.Host == "" || strings.ContainsAny(c.Host, " \t\n") {
		return bad("host", "%q: must be sim, local or an SSH target ([user@]host[:port] or an ~/.ssh/config alias)", c.Host)
	}
	for key, v := range map[string]string{"server.url": c.Server.URL, "server.metrics_url": c.Server.MetricsURL} {
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad(key, "%q is not an http(s) URL (e.g. http://127.0.0.1:8000)", v)
		}
	}
	if c.Server.URL == "" {
		return bad("server.url", "must be set (e.g. http://127.0.0.1:8000)")
	}
	if p := c.Model.Preset; p != "" {
		known := model.PresetNames()
		if !slices.Contains(known, strings.ToLower(p)) {
			return bad("model.preset", "%q is not a built-in model (known: %s); or leave it out and set model.config", p, strings.Join(known, ", "))
		}
	}
	if c.Load.PollInterval.Duration <= 0 {
		return bad("load.poll_interval", "must be more than 0 (e.g. 1s)")
	}
	if len(c.Macro.Concurrency) == 0 {
		return bad("macro.concurrency", "needs at least one level (e.g. [1, 8, 64])")
	}
	if c.Macro.Requests == 0 && c.Macro.Duration.Duration == 0 {
		return bad("macro.requests", "set requests (per level) or duration (per level)")
	}
	if strings.TrimSpace(c.Micro.Python) == "" {
		return bad("micro.python", "must name the Python to run (e.g. python3)")
	}
	if strings.TrimSpace(c.NCCL.Torchrun) == "" {
		return bad("nccl.torchrun", "must name torchrun (e.g. torchrun)")
	}
	if c.Model.TP < 1 {
		return bad("model.tp", "must be at least 1, got %d", c.Model.TP)
	}
	if c.Model.ExpectGiB < 0 {
		return bad("model.expect_gib", "must not be negative")
	}
	switch c.Macro.API {
	case "completions", "chat":
	default:
		return bad("macro.api", "must be completions or chat, got %q", c.Macro.API)
	}
	if err := onhost.CheckMode(c.Macro.Loadgen); err != nil {
		return bad("macro.loadgen", "must be here or host, got %q", c.Macro.Loadgen)
	}
	for _, v := range c.Macro.Concurrency {
		if v < 1 {
			return bad("macro.concurrency", "levels must be at least 1, got %d", v)
		}
	}
	for key, v := range map[string]int{"macro.requests": c.Macro.Requests, "macro.warmup": c.Macro.Warmup,
		"macro.input_len": c.Macro.InputLen, "macro.output_len": c.Macro.OutputLen,
		"nccl.nproc": c.NCCL.NProc, "profile.requests": c.Profile.Requests, "profile.steps": c.Profile.Steps} {
		if v < 0 {
			return bad(key, "must not be negative, got %d", v)
		}
	}
	if c.Macro.OutputLen == 1 {
		return bad("macro.output_len", "must be at least 2 so that TPOT is defined")
	}
	if c.Macro.Rate < 0 {
		return bad("macro.rate", "must not be negative")
	}
	if c.Macro.SLO != "" {
		if _, err := macro.ParseSLO(c.Macro.SLO); err != nil {
			return bad("macro.slo", "%v", err)
		}
	}
	switch c.Macro.Dataset {
	case "", macro.DatasetRandom:
	case macro.DatasetShareGPT, macro.DatasetJSONL:
		if c.Macro.DatasetFile == "" {
			return bad("macro.dataset_file", "dataset %s needs a file", c.Macro.Dataset)
		}
	default:
		return bad("macro.dataset", "must be random, sharegpt or jsonl, got %q", c.Macro.Dataset)
	}
	if c.Macro.RangeRatio < 0 || c.Macro.RangeRatio >= 1 {
		return bad("macro.range_ratio", "want 0 or more and under 1, got %g", c.Macro.RangeRatio)
	}
	if c.Macro.DatasetMax < 0 || c.Macro.PrefixLen < 0 {
		return bad("macro.dataset_max", "dataset_max and prefix_len must not be negative")
	}
	if c.Macro.Repeat < 0 || c.Macro.Repeat > 100 {
		return bad("macro.repeat", "want 1 to 100, got %d", c.Macro.Repeat)
	}
	if err := c.validateRunSim(bad); err != nil {
		return err
	}
	for key, list := range map[string][]int{"micro.batch": c.Micro.Batch, "nccl.batch": c.NCCL.Batch} {
		for _, v := range list {
			if v < 1 {
				return bad(key, "batch sizes must be at least 1, got %d", v)
			}
		}
	}
	return nil
}
