package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh"
)

const tailUsage = `profdeck tail [-c FILE] [--host HOST] [--identity FILE] [--known-hosts FILE]
                     [--ssh-config FILE] [--accept-new-host-key] [--from-start] [--json FILE|-] [--jsonl FILE] FILE

Prints the lines of FILE on HOST as they are written, like tail -F: the last
10 lines first (all of it with --from-start), then every new line. It keeps
going across dropped connections without losing or repeating a line, and
starts over when the file is truncated or replaced. Connection events go to
stderr. HOST is an ~/.ssh/config alias or [user@]host[:port] (or sim, local);
the campaign's host and SSH settings apply unless the flags say otherwise.
Ctrl-C ends it (exit 0).`

// tailRecord is one --jsonl line: a line of the file, or a note that it
// started over.
type tailRecord struct {
	Line   string `json:"line,omitempty"`
	Offset int64  `json:"offset"`
	Reset  bool   `json:"reset,omitempty"`
	Note   string `json:"note,omitempty"`
}

// tailSummary is the --json document, written when the follow ends.
type tailSummary struct {
	Host   string `json:"host"`
	File   string `json:"file"`
	Lines  int    `json:"lines"`
	Offset int64  `json:"offset"` // past the last line printed
	Resets int    `json:"resets"`
}

// TailMain is "profdeck tail": follow a file on the host across reconnects.
func TailMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, fromStart := newTail(stdout, stderr)
	files, err := c.ParseFiles(args, 1)
	if err != nil {
		return c.Exit(ctx, err)
	}
	camp, err := tailPlan(c)
	if err != nil {
		return c.Exit(ctx, err)
	}
	err = tail(ctx, c, camp, files[0], *fromStart)
	if ctx.Err() != nil {
		err = nil // Ctrl-C is how a tail ends
	}
	return c.Exit(ctx, err)
}

// newTail is the tail command with its flags.
func newTail(stdout, stderr io.Writer) (*Command, *bool) {
	c := New("tail", tailUsage, stdout, stderr)
	fs := c.Flags
	fs.String("identity", "", "identity (private key) file (default: the campaign's ssh.identity)")
	fs.String("known-hosts", "", "known_hosts file, read and appended to with --accept-new-host-key (default: the campaign's ssh.known_hosts)")
	fs.String("ssh-config", "", "ssh config file instead of ~/.ssh/config (default: the campaign's ssh.config)")
	fs.Bool("accept-new-host-key", false, "add an unknown host key to known_hosts; a changed key is still refused (default: the campaign's ssh.accept_new_host_key)")
	return c, fs.Bool("from-start", false, "print the whole file, not only its last 10 lines")
}

// tailPlan is the campaign with the SSH flags over it: a host is needed.
func tailPlan(c *Command) (*campaign.Campaign, error) {
	camp, fromFile, err := c.Campaign(tailBinds...)
	if err == nil && !fromFile && !c.Set("host") {
		err = BadInput("need --host HOST (or -c FILE) and exactly one FILE")
	}
	return camp, err
}

// tailBinds are the tail command's flags that set campaign keys.
var tailBinds = []campaign.Flag{
	{Name: "identity", Key: "ssh.identity"}, {Name: "known-hosts", Key: "ssh.known_hosts"},
	{Name: "ssh-config", Key: "ssh.config"}, {Name: "accept-new-host-key", Key: "ssh.accept_new_host_key"},
}

func tail(ctx context.Context, c *Command, camp *campaign.Campaign, path string, fromStart bool) error {
	h, err := c.OpenHost(ctx, camp, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	var errMu sync.Mutex
	logf := func(format string, a ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		fmt.Fprintf(c.Stderr, "profdeck tail: "+format+"\n", a...)
	}
	statesDone := make(chan struct{})
	go func() {
		defer close(statesDone)
		sr, ok := h.(remote.StateReporter)
		if !ok {
			return
		}
		label := h.Name()
		if l, ok := h.(interface{ Label() string }); ok {
			label = l.Label() // the alias and the address it resolved to
		}
		last := ""
		for s := range sr.States() {
			if s.State == last && s.State == "up" {
				continue // round-trip updates
			}
			last = s.State
			logf("%s", describeState(label, s))
		}
	}()
	sum := tailSummary{Host: h.Name(), File: path}
	if !fromStart {
		if sum.Offset, err = lastLinesOffset(ctx, h, path, 10); err != nil {
			return err
		}
	}
	err = h.Follow(ctx, path, sum.Offset, func(ev remote.FollowEvent) {
		c.WriteLine(tailRecord{Line: ev.Line, Offset: ev.Offset, Reset: ev.Reset, Note: ev.Note})
		if ev.Reset {
			sum.Resets++
			logf("%s", ev.Note)
			return
		}
		sum.Lines, sum.Offset = sum.Lines+1, ev.Offset
		io.WriteString(c.Human(), ev.Line+"\n")
	})
	h.Close()
	<-statesDone
	if werr := c.WriteJSON(sum); werr != nil {
		return werr
	}
	return err
}

// describeState is one line for a connection state change.
func describeState(label string, s remote.State) string {
	switch s.State {
	case "up":
		return fmt.Sprintf("%s: connected (round trip %s)", label, s.RTT.Round(100*time.Microsecond))
	case "backoff":
		return fmt.Sprintf("%s: reconnecting in %s (%v)", label, s.RetryIn.Round(10*time.Millisecond), s.Err)
	case "down":
		if errors.Is(s.Err, ssh.ErrClosed) {
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
func lastLinesOffset(ctx context.Context, h remote.Host, path string, n int) (int64, error) {
	script := fmt.Sprintf(`f=%s; [ -e "$f" ] || { echo 0; exit 0; }
s=$(stat -L -c %%s -- "$f") || exit 1
w=1048576; if [ "$s" -lt "$w" ]; then w=$s; fi
t=$(tail -c +$((s-w+1)) -- "$f" | head -c "$w" | tail -n %d | wc -c)
echo $((s-t))`, remote.QuotePath(path), n)
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
