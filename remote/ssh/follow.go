package ssh

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// followMarker starts the line the follow script prints before tail runs:
// the offset tail starts at, the file's inode and size.
const followMarker = "@@profdeck-follow "

// fpLen is how many bytes before the offset are compared on a resume, to
// notice a file that was truncated and grew back while we were away.
const fpLen = 64

// followState is what survives a reconnect.
type followState struct {
	off int64
	ino string // inode being followed; "" when unknown
	fp  []byte // the last fpLen bytes before off; nil when unknown
}

func (st *followState) reset() {
	st.off, st.ino, st.fp = 0, "", nil
}

func (st *followState) advance(b []byte) {
	st.off += int64(len(b))
	st.fp = append(st.fp, b...)
	if len(st.fp) > fpLen {
		st.fp = append(st.fp[:0], st.fp[len(st.fp)-fpLen:]...)
	}
}

// script resumes at off only if the file is the same one (inode, size, and
// the bytes before off); otherwise it starts at 0 and says so. GNU tail -F
// then follows by name, reporting truncation and replacement in-band
// (stderr joined to stdout keeps the order).
func (st *followState) script(path string) string {
	k := len(st.fp)
	return fmt.Sprintf(`f=%s; off=%d; ino=%s; k=%d; fp=%s
cur=; size=; start=0
if [ -e "$f" ]; then cur=$(stat -L -c %%i -- "$f" 2>/dev/null); size=$(stat -L -c %%s -- "$f" 2>/dev/null); fi
if [ "$off" -gt 0 ] && [ -n "$size" ] && [ "$size" -ge "$off" ] && { [ -z "$ino" ] || [ "$ino" = "$cur" ]; }; then
  if [ "$k" -eq 0 ]; then start=$off
  elif [ "$(tail -c +$((off-k+1)) -- "$f" | head -c "$k" | od -An -v -tx1 | tr -d ' \n')" = "$fp" ]; then start=$off; fi
fi
printf '%s%%s %%s %%s\n' "$start" "$cur" "$size"
LC_ALL=C; export LC_ALL
exec tail -c +$((start+1)) -F -s 0.5 --pid=$PPID -- "$f" 2>&1`,
		qpath(path), st.off, remote.Quote(st.ino), k, remote.Quote(hex.EncodeToString(st.fp)), followMarker)
}

// Notices GNU tail writes (LC_ALL=C), possibly after a partial line.
var (
	reTruncated = regexp.MustCompile(`^(.*?)tail: (.+): file truncated$`)
	reReplaced  = regexp.MustCompile(`^(.*?)tail: (.+) has been replaced;  following new file$`)
	reAppeared  = regexp.MustCompile(`^(.*?)tail: (.+) has appeared;  following new file$`)
	reOther     = regexp.MustCompile(`^(.*?)tail: (.+ has become inaccessible: .+|cannot open .+ for reading: .+|inotify .+|warning: .+|.+ has been replaced with an untailable file.*|.+: cannot follow end of this type of file.*|error reading .+|no files remaining)$`)
)

// notice classifies a line of tail's output: kind is "" for file content,
// "reset" or "other"; prefix is file content before the notice.
func notice(line string) (kind, prefix, msg string) {
	if !strings.Contains(line, "tail: ") {
		return "", "", ""
	}
	for _, re := range []*regexp.Regexp{reTruncated, reReplaced, reAppeared} {
		if m := re.FindStringSubmatch(line); m != nil {
			return "reset", m[1], line[len(m[1]):]
		}
	}
	if m := reOther.FindStringSubmatch(line); m != nil {
		return "other", m[1], line[len(m[1]):]
	}
	return "", "", ""
}

// Follow streams the lines of path from byte offset from, like tail -F,
// until ctx ends. It survives reconnects: it resumes at the offset of the
// last complete line it passed on, so no line is lost or repeated. When the
// file is truncated or replaced (log rotation, a server restart) it sends a
// Reset event and reads the new file from its beginning. A missing file is
// waited for.
func (h *Host) Follow(ctx context.Context, path string, from int64, out func(remote.FollowEvent)) error {
	if from < 0 {
		from = 0
	}
	st := &followState{off: from}
	failures := 0
	var lastErr error
	for {
		c, err := h.conn(ctx)
		if err != nil {
			return h.wrap("following "+path, err)
		}
		before := st.off
		read, err := h.followOnce(ctx, c, path, st, out)
		if ctx.Err() != nil {
			return h.wrap("following "+path, ctx.Err())
		}
		if read || st.off != before {
			failures = 0
		}
		if err != nil {
			// A lost connection shows first as an error here and a moment
			// later as the connection ending.
			select {
			case <-c.done:
			case <-time.After(200 * time.Millisecond):
			}
		}
		if err != nil && !c.isDone() {
			// Not a lost connection: tail itself failed. Retry a few
			// times (it may have been killed), then give up.
			failures++
			lastErr = err
			if failures >= 3 {
				return h.wrap("following "+path, lastErr)
			}
		}
		t := time.NewTimer(time.Duration(failures) * 300 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return h.wrap("following "+path, ctx.Err())
		case <-t.C:
		}
	}
}

// followOnce runs one tail over connection c. It returns when the session
// ends; read says whether any line came.
func (h *Host) followOnce(ctx context.Context, c *conn, path string, st *followState, out func(remote.FollowEvent)) (read bool, err error) {
	p, err := h.start(ctx, c, st.script(path), nil)
	if err != nil {
		return false, err
	}
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			p.stop()
		case <-stopped:
		}
	}()
	head, err := p.stdout.ReadString('\n')
	rest, ok := strings.CutPrefix(strings.TrimRight(head, "\n"), followMarker)
	if !ok {
		if ended, werr := p.result(2 * time.Second); ended && werr != nil {
			return false, h.exitError("tail -F "+path, werr, strings.TrimSpace(head))
		}
		if err == nil {
			err = fmt.Errorf("unexpected output %q", head)
		}
		return false, h.wrap("starting tail -F "+path, err)
	}
	st.header(path, rest, out)
	var sp splitter
	var carry []byte
	buf := make([]byte, 32<<10)
	emit := func(b, raw []byte) {
		line := string(b)
		kind, prefix, msg := notice(line)
		switch kind {
		case "reset":
			carry = nil
			wasReading := st.off > 0
			note := path + " was truncated; reading it from its beginning"
			if strings.HasSuffix(msg, "following new file") {
				st.reset()
				note = path + " was replaced (rotated or recreated); reading the new file from its beginning"
			} else {
				st.off, st.fp = 0, nil
			}
			if wasReading {
				out(remote.FollowEvent{Reset: true, Note: note})
			}
			return
		case "other":
			if prefix != "" {
				carry = append(carry, prefix...)
				st.advance([]byte(prefix))
			}
			return
		}
		read = true
		if carry != nil {
			line = string(carry) + line
			carry = nil
		}
		st.advance(raw)
		out(remote.FollowEvent{Line: line, Offset: st.off})
	}
	for {
		n, rerr := p.stdout.Read(buf)
		if n > 0 {
			sp.feed(buf[:n], emit)
		}
		if rerr != nil {
			break
		}
	}
	return read, h.tailEnded(ctx, p, path)
}

// header reads the script's first line (the offset tail starts at, the
// file's inode and size): a start other than where the last tail stopped
// means the file is missing, or was truncated or replaced.
func (st *followState) header(path, rest string, out func(remote.FollowEvent)) {
	f := strings.Fields(rest + " - -")
	start, _ := strconv.ParseInt(f[0], 10, 64)
	if start != st.off {
		note := fmt.Sprintf("%s is missing; waiting for it and reading it from its beginning", path)
		if f[2] != "-" && f[2] != "" {
			note = fmt.Sprintf("%s was truncated or replaced (now %s bytes, was read to %d); reading it from its beginning", path, f[2], st.off)
		}
		st.reset()
		out(remote.FollowEvent{Reset: true, Note: note})
	}
	if f[1] != "-" {
		st.ino = f[1]
	}
}

// tailEnded is why a tail's output ended: the context, a session that did
// not end, or its exit; a tail that may outlive a dropped link is kept to
// be killed later.
func (h *Host) tailEnded(ctx context.Context, p *proc, path string) error {
	ended, werr := p.result(2 * time.Second)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !ended || lost(werr) {
		h.addOrphan(p.pgid) // tail may outlive a silently dropped link
	}
	if !ended {
		return errors.New("tail output ended but its session did not")
	}
	if werr == nil {
		return errors.New("tail ended")
	}
	return h.exitError("tail -F "+path, werr, "")
}
