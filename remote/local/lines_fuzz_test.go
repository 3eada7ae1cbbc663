package local

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzReadLines: every byte of the input comes back in order, split at
// newlines, with a \r before each newline dropped; nothing panics.
func FuzzReadLines(f *testing.F) {
	for _, s := range []string{"", "a\nb\n", "a\r\nb", "\n\n\r\n", "no newline", "x\ry\rz\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []string
		readLines(bytes.NewReader(b), func(s string) { got = append(got, s) })
		var want []string
		if len(b) > 0 {
			parts := strings.Split(string(b), "\n")
			if parts[len(parts)-1] == "" {
				parts = parts[:len(parts)-1]
			}
			for _, p := range parts {
				want = append(want, strings.TrimSuffix(p, "\r"))
			}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("input %q: got %q, want %q", b, got, want)
		}
	})
}
