package ssh

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func split(chunks ...string) (lines []string, raw string) {
	var s splitter
	var rb strings.Builder
	emit := func(l, r []byte) {
		lines = append(lines, string(l))
		rb.Write(r)
	}
	for _, c := range chunks {
		s.feed([]byte(c), emit)
	}
	s.flush(emit)
	return lines, rb.String()
}

func TestSplitter(t *testing.T) {
	for _, c := range []struct {
		chunks []string
		want   string
	}{
		{[]string{"a\nb\n"}, "a|b"},
		{[]string{"a\r\nb"}, "a|b"},
		{[]string{"a\r", "\nb\n"}, "a|b"},            // CRLF split across reads
		{[]string{"10%\r20%\r30%\n"}, "10%|20%|30%"}, // progress bar redraws
		{[]string{"x\r"}, "x"},
		{[]string{"", "\n\n"}, "|"},
		{[]string{"no newline"}, "no newline"},
	} {
		lines, raw := split(c.chunks...)
		if strings.Join(lines, "|") != c.want || raw != strings.Join(c.chunks, "") {
			t.Errorf("%q: lines %q raw %q", c.chunks, lines, raw)
		}
	}
	long := strings.Repeat("x", maxLine+10) + "\n"
	lines, raw := split(long)
	if len(lines) != 2 || len(lines[0]) != maxLine || raw != long {
		t.Errorf("long line: %d pieces", len(lines))
	}
}

func TestNotice(t *testing.T) {
	for _, c := range []struct{ line, kind, prefix string }{
		{"tail: /var/log/x.log: file truncated", "reset", ""},
		{"partialtail: '/a b/x.log' has been replaced;  following new file", "reset", "partial"},
		{"tail: 'x.log' has appeared;  following new file", "reset", ""},
		{"tail: 'x.log' has become inaccessible: No such file or directory", "other", ""},
		{"tail: cannot open 'x.log' for reading: No such file or directory", "other", ""},
		{"INFO tail: nothing to see", "", ""},
		{"regular log line", "", ""},
	} {
		kind, prefix, _ := notice(c.line)
		if kind != c.kind || prefix != c.prefix {
			t.Errorf("%q: kind %q prefix %q", c.line, kind, prefix)
		}
	}
}

// FuzzSplitter: any input cut anywhere gives back exactly its bytes, and
// no line holds a line break.
func FuzzSplitter(f *testing.F) {
	f.Add([]byte("a\nb\r\nc\rd"), uint8(1))
	f.Add([]byte("\r\r\n\n\r"), uint8(2))
	f.Add([]byte("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01]\r"), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		var s splitter
		var raw bytes.Buffer
		emit := func(l, r []byte) {
			if bytes.ContainsAny(l, "\r\n") {
				t.Fatalf("line %q holds a break", l)
			}
			if !bytes.HasPrefix(r, l) || len(r)-len(l) > 2 {
				t.Fatalf("raw %q does not match line %q", r, l)
			}
			raw.Write(r)
		}
		step := int(cut)%16 + 1
		for i := 0; i < len(data); i += step {
			s.feed(data[i:min(i+step, len(data))], emit)
		}
		s.flush(emit)
		if !bytes.Equal(raw.Bytes(), data) {
			t.Fatalf("got back %q from %q", raw.Bytes(), data)
		}
	})
}

// FuzzNotice: the tail notice parser never panics and a notice's prefix is
// a prefix of the line.
func FuzzNotice(f *testing.F) {
	f.Add("tail: x: file truncated")
	f.Add("abc tail: 'y' has been replaced;  following new file")
	f.Add("tail: tail: tail: ")
	f.Fuzz(func(t *testing.T, line string) {
		kind, prefix, msg := notice(line)
		if kind != "" && (!strings.HasPrefix(line, prefix) || prefix+msg != line) {
			t.Fatalf("%q: prefix %q msg %q", line, prefix, msg)
		}
	})
}

// A command that failed without a word on stderr is still explained: by
// its exit status.
func TestExitMessage(t *testing.T) {
	status := errors.New("Process exited with status 1")
	if got := exitMessage("  cat: x: No such file\n", status); got.Error() != "cat: x: No such file" {
		t.Errorf("with stderr: %q", got)
	}
	if got := exitMessage(" \n", status); got != status {
		t.Errorf("without stderr: %q, want the exit status", got)
	}
}
