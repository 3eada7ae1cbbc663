package onhost

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// An agent that never answers is stopped after AnswerTimeout, and the
// error says so; one that answers runs on past it.
func TestSilentAgentStopped(t *testing.T) {
	defer func(d time.Duration) { AnswerTimeout = d }(AnswerTimeout)
	AnswerTimeout = 300 * time.Millisecond
	silent := func(ctx context.Context, _ io.Reader, _ func(remote.Line)) error {
		<-ctx.Done()
		return ctx.Err()
	}
	done := make(chan error, 1)
	go func() {
		done <- supervise(context.Background(), silent, strings.NewReader(""), time.Second, func(context.Context, remote.Line) {})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errNoAnswer) || !strings.Contains(err.Error(), "stopped") {
			t.Fatalf("got %v, want the agent stopped for not answering", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a silent agent still runs 10 s after a 300 ms answer deadline")
	}
	talks := func(ctx context.Context, _ io.Reader, out func(remote.Line)) error {
		out(remote.Line{Stream: remote.Stdout, Text: `{"ready":true}`})
		time.Sleep(2 * AnswerTimeout)
		return nil
	}
	if err := supervise(context.Background(), talks, strings.NewReader(""), time.Second, func(context.Context, remote.Line) {}); err != nil {
		t.Fatalf("an agent that answered: %v", err)
	}
}
