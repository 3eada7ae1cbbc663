package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// follower is the state of one Follow: the open file, its identity, and the
// bytes read past the last complete line.
type follower struct {
	path    string
	f       *os.File
	ino     uint64
	dev     uint64
	off     int64 // bytes of the current file read so far
	partial []byte
	buf     []byte // the read buffer, kept across polls
	out     func(remote.FollowEvent)
}

// Follow reads path from byte offset from like tail -F: it waits for a
// missing file, emits every complete line once, and when the file is
// truncated (shorter than what was read) or replaced (another inode at the
// path, e.g. a restart's new log or a rotation) it emits a Reset event and
// reads the new content from offset 0. It returns when ctx ends.
func (h *Host) Follow(ctx context.Context, path string, from int64, out func(remote.FollowEvent)) error {
	if from < 0 {
		from = 0
	}
	fl := &follower{path: expandHome(path), off: from, out: out}
	defer fl.close()
	t := time.NewTicker(h.poll())
	defer t.Stop()
	for {
		if err := fl.step(); err != nil {
			return fmt.Errorf("follow %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return ctxErr(ctx, "follow "+path)
		case <-t.C:
		}
	}
}

func (fl *follower) close() {
	if fl.f != nil {
		_ = fl.f.Close()
		fl.f = nil
	}
}

func identity(fi os.FileInfo) (ino, dev uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino), uint64(st.Dev)
	}
	return 0, 0
}

func (fl *follower) reset(note string) {
	fl.off = 0
	fl.partial = fl.partial[:0]
	fl.out(remote.FollowEvent{Reset: true, Note: note})
}

// step opens the file when needed, notices truncation and replacement, and
// reads what is new.
func (fl *follower) step() error {
	if fl.f == nil {
		f, err := os.Open(fl.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // wait for it
		}
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		if fi.IsDir() {
			f.Close()
			return fmt.Errorf("is a directory")
		}
		fl.f = f
		fl.ino, fl.dev = identity(fi)
		if fi.Size() < fl.off {
			fl.reset(fmt.Sprintf("%s is shorter (%d bytes) than the offset %d: reading it from the start", fl.path, fi.Size(), fl.off))
		}
	}
	// Replaced? Finish the old file's complete lines, then switch.
	if fi, err := os.Stat(fl.path); err == nil {
		ino, dev := identity(fi)
		if ino != fl.ino || dev != fl.dev {
			if err := fl.read(); err != nil {
				return err
			}
			fl.close()
			fl.reset(fl.path + " was replaced: reading the new file from the start")
			return fl.step()
		}
	}
	fi, err := fl.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < fl.off {
		fl.reset(fmt.Sprintf("%s was truncated (now %d bytes): reading it from the start", fl.path, fi.Size()))
	}
	return fl.read()
}

// read reads from the current offset to the end and emits complete lines.
func (fl *follower) read() error {
	if fl.buf == nil {
		fl.buf = make([]byte, 256*1024)
	}
	buf := fl.buf
	for {
		n, err := fl.f.ReadAt(buf, fl.off)
		if n > 0 {
			fl.off += int64(n)
			fl.emit(buf[:n])
		}
		if errors.Is(err, io.EOF) || n == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// emit splits data into lines, keeping an incomplete last line for later.
// Offsets are of the byte just past each line in the file.
func (fl *follower) emit(data []byte) {
	base := fl.off - int64(len(data)) - int64(len(fl.partial))
	buf := append(fl.partial, data...)
	start := 0
	for {
		i := bytes.IndexByte(buf[start:], '\n')
		if i < 0 {
			break
		}
		end := start + i
		fl.out(remote.FollowEvent{Line: strings.TrimSuffix(string(buf[start:end]), "\r"), Offset: base + int64(end+1)})
		start = end + 1
	}
	rest := buf[start:]
	for len(rest) >= MaxLine {
		fl.out(remote.FollowEvent{Line: string(rest[:MaxLine]), Offset: base + int64(start+MaxLine)})
		start += MaxLine
		rest = buf[start:]
	}
	fl.partial = append(fl.partial[:0:0], rest...)
}
