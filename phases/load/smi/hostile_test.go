package smi

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/memtest"
)

// lazyRepeat yields s n times without holding the copies.
type lazyRepeat struct {
	s   string
	n   int
	off int
}

func (r *lazyRepeat) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.s[r.off:])
	r.off += k
	if r.off == len(r.s) {
		r.off, r.n = 0, r.n-1
	}
	return k, nil
}

// 200 MB of looped nvidia-smi output, and a file of one 200 MB line, are
// read in bounded memory; the cut and the dropped line are reported.
func TestHugeInputBoundedMemory(t *testing.T) {
	fix, err := os.ReadFile("testdata/nvidia-smi-03-h100x8-535-table.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := memtest.Run(t, 256, func() string {
		text, cut, dropped, err := ReadText(&lazyRepeat{s: string(fix), n: (200 << 20) / len(fix)})
		gpus := Parse(text, nil)
		looped := fmt.Sprintf("looped: cut=%v dropped=%d err=%v gpus=%d len=%d", cut, dropped, err, len(gpus), len(text))
		text, cut, dropped, err = ReadText(io.MultiReader(strings.NewReader(string(fix)), &lazyRepeat{s: strings.Repeat("x", 1<<20), n: 200}, strings.NewReader("\n"+string(fix))))
		gpus = Parse(text, nil)
		return looped + fmt.Sprintf("; one line: cut=%v dropped=%d err=%v gpus=%d", cut, dropped, err, len(gpus))
	})
	if !strings.Contains(got, "looped: cut=true dropped=0 err=<nil> gpus=8") || !strings.Contains(got, "one line: cut=false dropped=1 err=<nil> gpus=8") {
		t.Fatalf("got %s", got)
	}
}
