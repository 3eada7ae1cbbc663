package ssh

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/remote"
)

const tailUsage = `usage: profdeck tail --host HOST [--identity FILE] [--known-hosts FILE]
                     [--ssh-config FILE] [--accept-new-host-key] [--from-start] FILE

Prints the lines of FILE on HOST as they are written, like tail -F: the last
10 lines first (all of it with --from-start), then every new line. It keeps
going across dropped connections without losing or repeating a line, and
starts over when the file is truncated or replaced. Connection events go to
stderr. HOST is an ~/.ssh/config alias or [user@]host[:port].
`

// TailMain is "profdeck tail": follow a remote file across reconnects.
func TailMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, tailUsage) }
	var opt Options
	host := fs.String("host", "", "SSH target: ~/.ssh/config alias or [user@]host[:port]")
	fs.StringVar(&opt.Identity, "identity", "", "identity (private key) file")
	fs.StringVar(&opt.KnownHosts, "known-hosts", "", "known_hosts file (read, and appended to with --accept-new-host-key)")
	fs.StringVar(&opt.SSHConfig, "ssh-config", "", "ssh config file instead of ~/.ssh/config")
	fs.BoolVar(&opt.AcceptNewHostKey, "accept-new-host-key", false, "add an unknown host key to known_hosts (a changed key is still refused)")
	fromStart := fs.Bool("from-start", false, "print the whole file, not only its last 10 lines")
	// Flags may come before or after FILE.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if *host == "" || len(files) != 1 {
		fmt.Fprintln(stderr, "profdeck tail: need --host HOST and exactly one FILE")
		fmt.Fprint(stderr, tailUsage)
		return 2
	}
	path := files[0]

	var errMu sync.Mutex
	logf := func(format string, a ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		fmt.Fprintf(stderr, "profdeck tail: "+format+"\n", a...)
	}
	h, err := Dial(ctx, *host, opt)
	if err != nil {
		if ctx.Err() != nil {
			return 0
		}
		logf("%v", err)
		return 1
	}
	defer h.Close()
	statesDone := make(chan struct{})
	go func() {
		defer close(statesDone)
		last := ""
		for s := range h.States() {
			if s.State == last && s.State == "up" {
				continue // round-trip updates
			}
			last = s.State
			logf("%s", describeState(h.Label(), s))
		}
	}()

	var from int64
	if !*fromStart {
		if from, err = lastLinesOffset(ctx, h, path, 10); err != nil {
			if ctx.Err() != nil {
				return 0
			}
			logf("%v", err)
			return 1
		}
	}
	err = h.Follow(ctx, path, from, func(ev remote.FollowEvent) {
		if ev.Reset {
			logf("%s", ev.Note)
			return
		}
		io.WriteString(stdout, ev.Line+"\n")
	})
	h.Close()
	<-statesDone
	if ctx.Err() != nil {
		return 0
	}
	logf("%v", err)
	return 1
}

// describeState is one line for a connection state change.
func describeState(label string, s remote.State) string {
	switch s.State {
	case "up":
		return fmt.Sprintf("%s: connected (round trip %s)", label, s.RTT.Round(100*time.Microsecond))
	case "backoff":
		return fmt.Sprintf("%s: reconnecting in %s (%v)", label, s.RetryIn.Round(10*time.Millisecond), s.Err)
	case "down":
		if errors.Is(s.Err, ErrClosed) {
			return label + ": closed"
		}
		return fmt.Sprintf("%s: connection lost (%v)", label, s.Err)
	case "failed":
		return fmt.Sprintf("%s: giving up: %v", label, s.Err)
	}
	return label + ": " + s.State
}

// lastLinesOffset is the byte offset where the last n lines of path start
// (0 when the file is missing or shorter). Only the last MiB is looked at.
func lastLinesOffset(ctx context.Context, h *Host, path string, n int) (int64, error) {
	script := fmt.Sprintf(`f=%s; [ -e "$f" ] || { echo 0; exit 0; }
s=$(stat -L -c %%s -- "$f") || exit 1
w=1048576; if [ "$s" -lt "$w" ]; then w=$s; fi
t=$(tail -c +$((s-w+1)) -- "$f" | head -c "$w" | tail -n %d | wc -c)
echo $((s-t))`, qpath(path), n)
	out, err := remote.Output(ctx, h, script)
	if err != nil {
		return 0, fmt.Errorf("finding the last lines of %s: %w", path, err)
	}
	off, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("finding the last lines of %s: unexpected %q", path, out)
	}
	return off, nil
}
