package campaign

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases/gpubench"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
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
		part, idx := splitIndex(part)
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
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

// splitIndex reads "variants[2]" as variants and 2 (-1 without an index).
func splitIndex(part string) (string, int) {
	name, rest, ok := strings.Cut(part, "[")
	if !ok {
		return part, -1
	}
	i, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
	if err != nil {
		return part, -1
	}
	return name, i
}

// KeyError is a problem with one campaign setting, named by its dotted
// YAML key; Campaign.Validate names what set it (the flag, or the file's
// line). Also is a second key, for a problem of the two together.
type KeyError struct {
	Key  string
	Also string
	Msg  string
}

func (e *KeyError) Error() string {
	if e.Also != "" {
		return e.Key + " and " + e.Also + ": " + e.Msg
	}
	return e.Key + ": " + e.Msg
}

// bad is a KeyError for key.
func bad(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every section and what spans sections, with the flags
// applied; each error names the flag that set the value, else the file's
// line and key, else the key (a default). Nil means the campaign can be
// mapped to every engine.
func (c *Campaign) Validate() []error {
	errs := c.problems()
	for i, err := range errs {
		errs[i] = c.name(err)
	}
	return errs
}

// problems are the sections' errors, each for its key.
func (c *Campaign) problems() []error {
	var errs []error
	errs = append(errs, c.validateTop()...)
	errs = append(errs, c.Server.Validate()...)
	errs = append(errs, c.Model.Validate()...)
	errs = append(errs, c.Load.Validate()...)
	errs = append(errs, c.Macro.Validate()...)
	errs = append(errs, c.Micro.Validate()...)
	errs = append(errs, c.NCCL.Validate()...)
	errs = append(errs, c.Profile.Validate()...)
	errs = append(errs, c.Capacity.Validate()...)
	errs = append(errs, c.Cost.Validate()...)
	errs = append(errs, c.Run.Validate()...)
	errs = append(errs, c.validateVariants()...)
	errs = append(errs, c.Sim.Validate()...)
	errs = append(errs, c.validateGivenZeros()...)
	return append(errs, c.validateSimHost()...)
}

// Check is Validate as one line: the first problem, and what else is
// wrong (e.g. "(and 2 more: --warmup, line 5: profile.steps)"); nil when
// nothing is.
func (c *Campaign) Check() error {
	errs := c.problems()
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return c.name(errs[0])
	}
	var more []string
	for _, e := range errs[1:] {
		if ke, ok := e.(*KeyError); ok {
			more = append(more, c.where(ke.Key))
		}
	}
	return fmt.Errorf("%w (and %d more: %s)", c.name(errs[0]), len(errs)-1, strings.Join(more, ", "))
}

// where names what set key: "--flag", "line N: key" or "key".
func (c *Campaign) where(key string) string {
	src := c.Source(key)
	switch {
	case strings.HasPrefix(src, "-"):
		return src
	case src != "":
		return src + ": " + key
	}
	return key
}

// name says what set a KeyError's key: "--flag: …", "line N: key: …" or
// "key: …".
func (c *Campaign) name(err error) error {
	ke, ok := err.(*KeyError)
	if !ok {
		return err
	}
	if ke.Also != "" {
		return fmt.Errorf("%s and %s: %s", c.where(ke.Key), c.where(ke.Also), ke.Msg)
	}
	return fmt.Errorf("%s: %s", c.where(ke.Key), ke.Msg)
}

// validateTop checks the host and the hosts list.
func (c *Campaign) validateTop() []error {
	var errs []error
	if err := c.validateHosts(); err != nil {
		errs = append(errs, err)
	}
	if c.Host == "" || strings.ContainsAny(c.Host, " \t\n") {
		errs = append(errs, bad("host", "%q: must be sim, local or an SSH target ([user@]host[:port] or an ~/.ssh/config alias)", c.Host))
	}
	return errs
}

// Validate checks the server section.
func (s Server) Validate() []error {
	var errs []error
	for _, kv := range []struct{ key, v string }{{"server.url", s.URL}, {"server.metrics_url", strings.TrimSpace(s.MetricsURL)}} {
		if kv.v == "" || kv.key == "server.metrics_url" && (kv.v == MetricsOff || kv.v == "none") {
			continue
		}
		u, err := url.Parse(kv.v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, bad(kv.key, "%q is not an http(s) URL (e.g. http://127.0.0.1:8000)", remote.MaskURL(kv.v)))
		}
	}
	if strings.TrimSpace(s.ProfilerDir) == "" {
		errs = append(errs, bad("server.profiler_dir", "must name the directory the torch profiler writes to on the host (e.g. %s)", DefaultProfilerDir))
	}
	if s.URL == "" {
		errs = append(errs, bad("server.url", "must be set (e.g. http://127.0.0.1:8000)"))
	}
	switch s.Engine {
	case EngineAuto, EngineVLLM, EngineSGLang, "":
	default:
		errs = append(errs, bad("server.engine", "must be vllm, sglang or auto, got %q", s.Engine))
	}
	return errs
}

// Serving engines server.engine names.
const (
	EngineAuto   = "auto"
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
)

// reSGLangLaunch is a launch command that starts SGLang.
var reSGLangLaunch = regexp.MustCompile(`\bsglang\.launch_server\b|\bsglang\s+serve\b|lmsysorg/sglang`)

// ServerEngine is the engine server.engine names; auto is SGLang when the
// launch command starts it, else auto (the log and /metrics tell).
func (c *Campaign) ServerEngine() string {
	e := c.Server.Engine
	if e == "" || e == EngineAuto {
		if reSGLangLaunch.MatchString(c.Server.Launch) {
			return EngineSGLang
		}
		return EngineAuto
	}
	return e
}

// Validate checks the model section.
func (m Model) Validate() []error {
	var errs []error
	if p := m.Preset; p != "" {
		known := model.PresetNames()
		if !slices.Contains(known, strings.ToLower(p)) {
			errs = append(errs, bad("model.preset", "%q is not a built-in model (known: %s); or leave it out and set model.config", p, strings.Join(known, ", ")))
		}
	}
	if m.TP < 1 {
		errs = append(errs, bad("model.tp", "must be at least 1, got %d", m.TP))
	}
	if m.ExpectGiB < 0 || math.IsNaN(m.ExpectGiB) || math.IsInf(m.ExpectGiB, 0) {
		errs = append(errs, bad("model.expect_gib", "must be a number of GiB, 0 or more, got %g", m.ExpectGiB))
	}
	return errs
}

// Validate checks the load section.
func (l Load) Validate() []error {
	var errs []error
	if l.PollInterval.Duration <= 0 {
		errs = append(errs, bad("load.poll_interval", "must be more than 0 (e.g. 1s)"))
	}
	if l.StallAfter.Duration <= 0 {
		errs = append(errs, bad("load.stall_after", "must be more than 0 (e.g. 5m)"))
	}
	return errs
}

// Validate checks the micro section.
func (m Micro) Validate() []error {
	var errs []error
	if strings.TrimSpace(m.Python) == "" {
		errs = append(errs, bad("micro.python", "must name the Python to run (e.g. python3)"))
	}
	return append(errs, validateBatch("micro.batch", m.Batch)...)
}

// Validate checks the nccl section.
func (n NCCL) Validate() []error {
	var errs []error
	if strings.TrimSpace(n.Torchrun) == "" {
		errs = append(errs, bad("nccl.torchrun", "must name torchrun (e.g. torchrun)"))
	}
	if n.NProc < 0 {
		errs = append(errs, bad("nccl.nproc", "must not be negative, got %d", n.NProc))
	}
	if n.MasterPort < 0 || n.MasterPort > 65535 {
		errs = append(errs, bad("nccl.master_port", "must be a port (1-65535), got %d", n.MasterPort))
	}
	return append(errs, validateBatch("nccl.batch", n.Batch)...)
}

func validateBatch(key string, batch []int) []error {
	if len(batch) == 0 {
		return []error{bad(key, "needs at least one batch size (e.g. [1, 8, 64])")}
	}
	if err := units.CheckInts(batch, 1, gpubench.MaxBatch); err != nil {
		return []error{bad(key, "batch sizes: %v", err)}
	}
	return nil
}

// Validate checks the profile section.
func (p Profile) Validate() []error {
	var errs []error
	if p.Requests < 0 {
		errs = append(errs, bad("profile.requests", "must not be negative, got %d", p.Requests))
	}
	if p.Steps < 1 || p.Steps > MaxProfileSteps {
		errs = append(errs, bad("profile.steps", "want 1 to %d engine steps per window, got %d", MaxProfileSteps, p.Steps))
	}
	return errs
}

// MaxProfileSteps bounds a capture window (each step is a trace's worth of
// kernels).
const MaxProfileSteps = 100000

// validateGivenZeros refuses a 0 the file or a flag gives a key whose 0
// cannot be used as given (a simulated load that takes no time, port 0)
// and whose default is not in Defaults (it differs by command, or is
// filled in the mapping). Left out, such a key is 0 and means its
// default; given, a value is used as it is or refused, never replaced.
func (c *Campaign) validateGivenZeros() []error {
	var errs []error
	for _, z := range []struct {
		key  string
		zero bool
		msg  string
	}{
		{"sim.load_time", c.Sim.LoadTime.Duration == 0, "must be more than 0 (e.g. 20s)"},
		{"nccl.master_port", c.NCCL.MasterPort == 0, "must be a port (1-65535), got 0"},
	} {
		if z.zero && c.given(z.key) {
			errs = append(errs, bad(z.key, "%s", z.msg))
		}
	}
	return errs
}
