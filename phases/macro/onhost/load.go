package onhost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote"
)

// ProfileLoad is the profile windows' load sent from the GPU host: each
// window starts the agent there (the program is copied once), which sends
// the window's requests over the host's loopback and reports each one.
// Ending the window's context stops it; nothing is left running.
func ProfileLoad(opt Options) profile.LoadFunc {
	if opt.Grace <= 0 {
		opt.Grace = 2 * time.Second
	}
	return func(ctx context.Context, spec profile.LoadSpec, sent func(), ended func(int, error)) error {
		start, _, err := ready(ctx, opt)
		if err != nil {
			return err
		}
		pr, pw := io.Pipe()
		done := make(chan struct{})
		var mu sync.Mutex
		var final *up
		go func() {
			defer pw.Close()
			b, _ := json.Marshal(down{Load: &spec})
			if _, err := pw.Write(append(b, '\n')); err != nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-done:
			}
		}()
		runErr := supervise(ctx, start, pr, opt.Grace, func(_ context.Context, l remote.Line) {
			var u up
			if l.Stream != remote.Stdout || json.Unmarshal([]byte(l.Text), &u) != nil {
				return
			}
			switch {
			case u.Sent:
				sent()
			case u.Ended && u.ReqErr != "":
				ended(0, errors.New(u.ReqErr))
			case u.Ended:
				ended(u.Tokens, nil)
			case u.Done:
				mu.Lock()
				if final == nil {
					final = &u
					close(done)
				}
				mu.Unlock()
			}
		})
		pw.Close()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ctx.Err() != nil:
			return nil // the window ended the load
		case final != nil && final.Err != "":
			return fmt.Errorf("the load on host %s: %s", opt.Host.Name(), final.Err)
		case runErr != nil:
			return fmt.Errorf("the load on host %s: %w", opt.Host.Name(), runErr)
		case final == nil:
			return fmt.Errorf("the load on host %s ended without a word", opt.Host.Name())
		}
		return nil
	}
}

// LoadFor is the profile windows' load for mode: nil (sent from here,
// through the host) unless mode is OnHost.
func LoadFor(mode string, opt Options) profile.LoadFunc {
	if mode != OnHost {
		return nil
	}
	return ProfileLoad(opt)
}

// serveLoad is the agent's side of a profile window's load: it sends the
// load from h, reporting each request, until in ends.
func serveLoad(ctx context.Context, h remote.Host, spec profile.LoadSpec, rd *bufio.Reader, o *wireOut, cancel func()) error {
	go func() {
		defer cancel()
		for {
			if _, err := readLine(rd); err != nil {
				return
			}
		}
	}()
	err := profile.RunLoad(ctx, h, spec, func() { o.send(up{Sent: true}) }, func(n int, err error) {
		u := up{Ended: true, Tokens: n}
		if err != nil {
			u.ReqErr = remote.ScrubSecrets(err.Error())
		}
		o.send(u)
	})
	d := up{Done: true}
	if err != nil {
		d.Err = err.Error()
	}
	o.send(d)
	return err
}
