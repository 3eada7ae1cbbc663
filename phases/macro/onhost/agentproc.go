package onhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/selfbin"
)

// starter runs the agent with stdin and calls out for each line it prints.
type starter func(ctx context.Context, stdin io.Reader, out func(remote.Line)) error

// ready gets the agent ready on opt.Host: a simulated host runs it in this
// process (in is nil); any other gets this program copied to it, and runs
// it there. A host of another platform is bad input.
func ready(ctx context.Context, opt Options) (start starter, in *selfbin.Install, err error) {
	h := opt.Host
	if remote.IsSimulated(h) {
		return inProcess(h), nil, nil
	}
	in, err = selfbin.Ensure(ctx, h, opt.Exe)
	var pe *selfbin.PlatformError
	if errors.As(err, &pe) {
		return nil, nil, &phases.InputError{Err: err}
	}
	if err != nil {
		return nil, nil, err
	}
	cmd := "exec " + remote.Quote(in.Path) + " " + AgentCommand
	return func(ctx context.Context, stdin io.Reader, out func(remote.Line)) error {
		return h.Run(ctx, cmd, stdin, out)
	}, in, nil
}

// supervise runs the agent with stdin until it ends. When ctx ends first,
// the caller's feed has closed stdin (the agent then stops and sends what
// it has); past grace the agent's process group is killed. The agent's own
// context is returned's: its lines may be passed on until it ends.
func supervise(ctx context.Context, start starter, stdin io.Reader, grace time.Duration, out func(context.Context, remote.Line)) error {
	actx, kill := context.WithCancel(context.WithoutCancel(ctx))
	defer kill()
	ended := make(chan error, 1)
	go func() { ended <- start(actx, stdin, func(l remote.Line) { out(actx, l) }) }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-ended:
		return err
	case <-time.After(grace):
		kill()
		return <-ended
	}
}

func installText(in *selfbin.Install) string {
	if in.Copied {
		return fmt.Sprintf("profdeck (%.1f MiB) copied to %s in %.1f s", float64(in.Bytes)/(1<<20), in.Path, in.Took.Seconds())
	}
	return fmt.Sprintf("profdeck already in %s (checked in %.2f s)", in.Path, in.Took.Seconds())
}

// inProcess runs the agent in this process against h (the simulated host).
func inProcess(h remote.Host) starter {
	return func(ctx context.Context, stdin io.Reader, out func(remote.Line)) error {
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			err := Serve(ctx, h, stdin, pw)
			pw.Close()
			done <- err
		}()
		readLines(pr, func(text string) { out(remote.Line{Stream: remote.Stdout, Text: text, At: time.Now()}) })
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return &remote.ExitError{Cmd: AgentCommand, Status: 1, Stderr: err.Error()}
		}
		return nil
	}
}
