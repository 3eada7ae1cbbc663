package ssh

import (
	"bytes"
	"io"
)

// maxLine caps a line; a longer one is passed on in pieces of this size.
const maxLine = 1 << 20

// splitter cuts a byte stream into lines. A line ends at "\n", "\r\n" or a
// lone "\r" (progress bars redraw with "\r"). For every line it reports the
// text and the bytes of the stream it used, terminator included, so
// callers can keep exact byte offsets.
type splitter struct {
	buf []byte
}

// feed adds p and calls emit for every complete line.
func (s *splitter) feed(p []byte, emit func(line, raw []byte)) {
	s.buf = append(s.buf, p...)
	start := 0
	for {
		rest := s.buf[start:]
		i := bytes.IndexAny(rest, "\r\n")
		if i < 0 {
			if len(rest) >= maxLine {
				emit(rest[:maxLine], rest[:maxLine])
				start += maxLine
				continue
			}
			break
		}
		if i > maxLine {
			emit(rest[:maxLine], rest[:maxLine])
			start += maxLine
			continue
		}
		n := i + 1
		if rest[i] == '\r' {
			if i+1 == len(rest) {
				break // "\r" at the end: wait to see if "\n" follows
			}
			if rest[i+1] == '\n' {
				n++
			}
		}
		emit(rest[:i], rest[:n])
		start += n
	}
	if start > 0 {
		s.buf = append(s.buf[:0], s.buf[start:]...)
	}
}

// flush emits what is left as a last line (a final line without a
// newline, or a trailing "\r").
func (s *splitter) flush(emit func(line, raw []byte)) {
	if len(s.buf) == 0 {
		return
	}
	b := s.buf
	if b[len(b)-1] == '\r' {
		emit(b[:len(b)-1], b)
	} else {
		emit(b, b)
	}
	s.buf = s.buf[:0]
}

// readLines reads r to the end, calling emit for every line, the last one
// even without a newline.
func readLines(r io.Reader, emit func(line, raw []byte)) error {
	var s splitter
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.feed(buf[:n], emit)
		}
		if err != nil {
			s.flush(emit)
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}
