package campaign

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases/macro/fleet"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"gopkg.in/yaml.v3"
)

// Loadgen is where the sweep's load generator runs. `macro.loadgen: host`
// is short for its mode alone.
type Loadgen struct {
	// Mode is here (default; the load goes through the host connection)
	// or host (the GPU host itself). With hosts it is here or left out:
	// the load then leaves from the agents' hosts. `macro.loadgen: host`
	// is short for mode host.
	Mode string `yaml:"mode"`
	// Hosts are the load agents' hosts: entries of host (an SSH target or
	// alias, or the campaign's own host) and procs (agent processes there,
	// default 1). Each level is split between the agents and its results
	// merged into one level (docs/scale-out.md).
	Hosts LoadgenHosts `yaml:"hosts"`
}

// LoadgenHosts are the agents' hosts, as the campaign lists them.
type LoadgenHosts []fleet.Agent

// loadgenFields are Loadgen's keys as the file writes them.
type loadgenFields struct {
	Mode  string        `yaml:"mode"`
	Hosts []fleet.Agent `yaml:"hosts"`
}

// UnmarshalYAML reads the short form (a mode) or the section.
func (l *Loadgen) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		l.Mode = n.Value
		return nil
	}
	if err := checkNode(n, reflect.TypeOf(loadgenFields{}), "macro.loadgen"); err != nil {
		return err
	}
	f := loadgenFields{Mode: l.Mode}
	if err := n.Decode(&f); err != nil {
		return err
	}
	l.Mode, l.Hosts = f.Mode, f.Hosts
	return nil
}

// MarshalYAML writes the short form when no hosts are named.
func (l Loadgen) MarshalYAML() (any, error) {
	if len(l.Hosts) == 0 {
		return l.Mode, nil
	}
	return loadgenFields{Mode: l.Mode, Hosts: l.Hosts}, nil
}

// String is the mode, and the hosts when there are some ("here
// gen1:2,gen2:2").
func (l Loadgen) String() string {
	if len(l.Hosts) == 0 {
		return l.Mode
	}
	return strings.TrimSpace(l.Mode + " " + l.Hosts.String())
}

// String writes the hosts as --loadgen-hosts takes them: gen1:2,gen2:2.
func (hs LoadgenHosts) String() string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Host + ":" + strconv.Itoa(max(h.Procs, 1))
	}
	return strings.Join(parts, ",")
}

// SetText reads --loadgen-hosts: HOST[:PROCS],… ("" names none).
func (hs *LoadgenHosts) SetText(s string) error {
	var out LoadgenHosts
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		host, procs, ok := strings.Cut(part, ":")
		a := fleet.Agent{Host: host, Procs: 1}
		if ok {
			n, err := strconv.Atoi(procs)
			if err != nil || n < 1 {
				return fmt.Errorf("%q: want HOST or HOST:PROCS with PROCS a whole number from 1", part)
			}
			a.Procs = n
		}
		out = append(out, a)
	}
	*hs = out
	return nil
}

// maxAgentProcs bounds one host's agent processes.
const maxAgentProcs = 256

// validate checks the mode and each host: one error per bad entry.
func (l Loadgen) validate() []error {
	var errs []error
	if err := onhost.CheckMode(l.Mode); err != nil {
		errs = append(errs, bad("macro.loadgen.mode", "must be here or host, got %q", l.Mode))
	}
	if len(l.Hosts) > 0 && l.Mode == "host" {
		errs = append(errs, bad("macro.loadgen.hosts", "the load leaves from the agents' hosts: mode host and hosts together say two places; leave mode out or here"))
	}
	for i, h := range l.Hosts {
		switch {
		case strings.TrimSpace(h.Host) == "":
			errs = append(errs, bad("macro.loadgen.hosts", "entry %d names no host", i+1))
		case strings.ContainsAny(h.Host, " \t\n,"):
			errs = append(errs, bad("macro.loadgen.hosts", "entry %d: host %q has a space or comma", i+1, h.Host))
		case h.Procs < 0 || h.Procs > maxAgentProcs:
			errs = append(errs, bad("macro.loadgen.hosts", "entry %d (%s): procs want 1 to %d, got %d", i+1, h.Host, maxAgentProcs, h.Procs))
		}
	}
	return errs
}
