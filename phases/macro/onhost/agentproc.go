package onhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
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
	var ue *selfbin.UnsafeError
	if errors.As(err, &pe) || errors.As(err, &ue) {
		return nil, nil, &phases.InputError{Err: err}
	}
	if err != nil {
		return nil, nil, err
	}
	// The program's folders, owner and sha256 are checked on the host
	// each time, before it reads the spec (and the API key in it).
	cmd := selfbin.Command(in, AgentCommand)
	return func(ctx context.Context, stdin io.Reader, out func(remote.Line)) error {
		var stderr []string
		err := h.Run(ctx, cmd, stdin, func(l remote.Line) {
			if l.Stream == remote.Stderr && len(stderr) < 8 {
				stderr = append(stderr, l.Text)
			}
			out(l)
		})
		if rerr := selfbin.Refusal(h.Name(), err, stderr); rerr != nil {
			return &phases.InputError{Err: rerr}
		}
		return err
	}, in, nil
}

// AnswerTimeout is how long the agent has to send its first line once
// started; past it, it is stopped and the run says so.
var AnswerTimeout = 30 * time.Second

// errNoAnswer is an agent stopped for not answering in time.
var errNoAnswer = errors.New("the agent did not answer")

// supervise runs the agent with stdin until it ends. When ctx ends first,
// the caller's feed has closed stdin (the agent then stops and sends what
// it has); past grace the agent's process group is killed. An agent that
// sends nothing on stdout within AnswerTimeout is killed. The agent's own
// context is returned's: its lines may be passed on until it ends.
func supervise(ctx context.Context, start starter, stdin io.Reader, grace time.Duration, out func(context.Context, remote.Line)) error {
	actx, kill := context.WithCancel(context.WithoutCancel(ctx))
	defer kill()
	ended := make(chan error, 1)
	answered := make(chan struct{})
	var once sync.Once
	go func() {
		ended <- start(actx, stdin, func(l remote.Line) {
			if l.Stream == remote.Stdout {
				once.Do(func() { close(answered) })
			}
			out(actx, l)
		})
	}()
	timer := time.NewTimer(AnswerTimeout)
	defer timer.Stop()
	for waiting := true; waiting; {
		select {
		case err := <-ended:
			return err
		case <-answered:
			answered = nil
		case <-timer.C:
			if answered != nil {
				kill()
				<-ended
				return fmt.Errorf("%w within %s: stopped", errNoAnswer, AnswerTimeout)
			}
		case <-ctx.Done():
			waiting = false
		}
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
