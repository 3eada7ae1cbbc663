package kubejob

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// FlagCheck asks the pod's agent to check its arguments and its spec,
// say its share, and stop.
const FlagCheck = "--check"

// AgentArgs are a pod's agent's arguments, as the manifest gives them
// once Kubernetes has expanded its $(VAR)s.
type AgentArgs struct {
	Coordinator   string
	Shard, Shards int
	Spec          string // the spec's file
	Check         bool
}

// ParseAgentArgs parses a pod's agent's arguments with the flag set its
// manifest is written for; the first thing wrong names its flag.
func ParseAgentArgs(args []string) (AgentArgs, error) {
	var a AgentArgs
	fs := flag.NewFlagSet(onhost.AgentCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.Coordinator, name(FlagCoordinator), "", "the coordinator's HOST:PORT")
	fs.IntVar(&a.Shard, name(FlagShard), -1, "this agent's shard: its completion index")
	fs.IntVar(&a.Shards, name(FlagShards), 0, "the number of agents")
	fs.StringVar(&a.Spec, name(FlagSpec), "", "the sweep's spec, a JSON file")
	fs.BoolVar(&a.Check, name(FlagCheck), false, "check the arguments and the spec, say the share, and stop")
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	if fs.NArg() > 0 {
		return a, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, ck := range []struct {
		flag string
		err  error
	}{
		{FlagCoordinator, CheckCoordinator(a.Coordinator)},
		{FlagShards, within(a.Shards, 1, MaxAgents)},
		{FlagShard, within(a.Shard, 0, a.Shards-1)},
		{FlagSpec, nonEmpty(a.Spec, "the spec's file")},
	} {
		if ck.err != nil {
			return a, fmt.Errorf("%s: %w", ck.flag, ck.err)
		}
	}
	return a, nil
}

// Share reads the spec's file, strictly, and is this agent's share of it.
func (a AgentArgs) Share() (onhost.Spec, error) {
	b, err := os.ReadFile(a.Spec)
	if err != nil {
		return onhost.Spec{}, fmt.Errorf("%s: %w", FlagSpec, err)
	}
	var s onhost.Spec
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%s %s: %w", FlagSpec, a.Spec, err)
	}
	share, err := Share(s, a.Shard, a.Shards)
	if err != nil {
		return share, fmt.Errorf("%s %s: %w", FlagSpec, a.Spec, err)
	}
	return share, nil
}

func name(flag string) string { return strings.TrimPrefix(flag, "--") }

func within(v, least, most int) error {
	if v < least || v > most {
		return fmt.Errorf("want %d to %d, got %d", least, most, v)
	}
	return nil
}

func nonEmpty(v, what string) error {
	if v == "" {
		return errors.New("want " + what)
	}
	return nil
}
