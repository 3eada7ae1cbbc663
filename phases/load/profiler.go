package load

import (
	"fmt"
	"strconv"
	"strings"
)

// ProfilerArgs are the flags or environment that enable the torch profiler
// for a vLLM version: --profiler-config from v0.13 on, the
// VLLM_TORCH_PROFILER_DIR environment variable before. An unknown version
// is taken as current. dir is the campaign's server.profiler_dir (the
// capture reads the same directory).
func ProfilerArgs(version, dir string) (flags []string, env map[string]string) {
	if v, ok := parseVersion(version); ok && v.less(0, 13) {
		return nil, map[string]string{"VLLM_TORCH_PROFILER_DIR": dir}
	}
	cfg := fmt.Sprintf(`{"profiler":"torch","torch_profiler_dir":%q}`, dir)
	return []string{"--profiler-config", cfg}, nil
}

// ProfilerArgsFor is ProfilerArgs for a serving engine: SGLang takes the
// torch profiler's directory from SGLANG_TORCH_PROFILER_DIR (its
// /start_profile then writes there; it has no flag for it), vLLM as
// ProfilerArgs says.
func ProfilerArgsFor(engine, version, dir string) (flags []string, env map[string]string) {
	if engine == "sglang" {
		return nil, map[string]string{"SGLANG_TORCH_PROFILER_DIR": dir}
	}
	return ProfilerArgs(version, dir)
}

type version struct{ major, minor int }

func (v version) less(major, minor int) bool {
	return v.major < major || v.major == major && v.minor < minor
}

func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return version{}, false
	}
	maj, err1 := strconv.Atoi(parts[0])
	minStr := parts[1]
	for i, c := range minStr {
		if c < '0' || c > '9' {
			minStr = minStr[:i]
			break
		}
	}
	mnr, err2 := strconv.Atoi(minStr)
	if err1 != nil || err2 != nil {
		return version{}, false
	}
	return version{maj, mnr}, true
}
