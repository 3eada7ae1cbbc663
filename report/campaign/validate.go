package campaign

import (
	"fmt"
	"net/url"
	"strings"

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
	if c.Host == "" {
		return bad("host", "must be sim, local or an SSH target")
	}
	if c.Server.URL != "" {
		u, err := url.Parse(c.Server.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("server.url", "%q is not an http(s) URL", c.Server.URL)
		}
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
	for _, v := range c.Macro.Concurrency {
		if v < 1 {
			return bad("macro.concurrency", "levels must be at least 1, got %d", v)
		}
	}
	for key, v := range map[string]int{"macro.requests": c.Macro.Requests, "macro.warmup": c.Macro.Warmup,
		"macro.input_len": c.Macro.InputLen, "macro.output_len": c.Macro.OutputLen,
		"nccl.nproc": c.NCCL.NProc, "profile.requests": c.Profile.Requests} {
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
	for key, list := range map[string][]int{"micro.batch": c.Micro.Batch, "nccl.batch": c.NCCL.Batch} {
		for _, v := range list {
			if v < 1 {
				return bad(key, "batch sizes must be at least 1, got %d", v)
			}
		}
	}
	return nil
}
