package profile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/memtest"
)

// repeatReader yields head, then n copies of fill, then tail, without
// holding them: a hostile trace of gigabytes costs nothing to make.
type repeatReader struct {
	head, fill, tail string
	n                int64
	pos              int64 // bytes of fill copies given
	part             int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	for {
		switch r.part {
		case 0:
			if r.head != "" {
				n := copy(p, r.head)
				r.head = r.head[n:]
				return n, nil
			}
			r.part = 1
		case 1:
			total := r.n * int64(len(r.fill))
			if r.pos < total {
				n := 0
				for n < len(p) && r.pos < total {
					c := copy(p[n:], r.fill[r.pos%int64(len(r.fill)):])
					if rem := total - r.pos; int64(c) > rem {
						c = int(rem)
					}
					n += c
					r.pos += int64(c)
				}
				return n, nil
			}
			r.part = 2
		default:
			if r.tail == "" {
				return 0, io.EOF
			}
			n := copy(p, r.tail)
			r.tail = r.tail[n:]
			return n, nil
		}
	}
}

// gzipped compresses r as it is read.
func gzipped(r io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		_, err := io.Copy(zw, r)
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

type hostile struct {
	name, want string
	r          func() io.Reader
}

func hostileTraces() []hostile {
	ev := `{"ph":"X","cat":"kernel","name":"k","dur":1},`
	return []hostile{
		{"2 GiB name, gzipped", "string longer", func() io.Reader {
			return gzipped(&repeatReader{head: `{"traceEvents":[{"ph":"X","cat":"kernel","name":"`, fill: "a", n: 2 << 30, tail: `","dur":1}]}`})
		}},
		{"200 MB string", "string longer", func() io.Reader {
			return &repeatReader{head: `{"traceEvents":[{"name":"`, fill: "x", n: 200 << 20, tail: `"}]}`}
		}},
		{"200 MB string in another key", "string longer", func() io.Reader {
			return &repeatReader{head: `{"meta":"`, fill: "x", n: 200 << 20, tail: `","traceEvents":[]}`}
		}},
		{"200 MB number", "number longer", func() io.Reader {
			return &repeatReader{head: `[{"ph":"X","cat":"kernel","name":"k","dur":`, fill: "9", n: 200 << 20, tail: `}]`}
		}},
		{"deep nesting", "nesting deeper", func() io.Reader {
			return &repeatReader{head: `{"traceEvents":[{"args":`, fill: `[`, n: 100 << 20}
		}},
		{"200 MB event of small keys", "event or value larger", func() io.Reader {
			return &repeatReader{head: `{"traceEvents":[{"ph":"X","args":{`, fill: `"k":"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv",`, n: 5 << 20, tail: `"z":1}}]}`}
		}},
		{"200 MB of whitespace", "whitespace longer", func() io.Reader {
			return &repeatReader{head: `{"traceEvents":[`, fill: " ", n: 200 << 20, tail: `]}`}
		}},
		{"gzip bomb of valid events", "", func() io.Reader {
			return gzipped(&repeatReader{head: `{"traceEvents":[`, fill: ev, n: 1 << 20, tail: `{}]}`})
		}},
	}
}

// Every hostile trace is an error naming the limit it broke, found while
// the parser holds little: the test runs in a child process whose resident
// memory may not pass 256 MiB (a 2 MB gzip of one 2 GiB string took 6.3 GB).
func TestHostileTracesBoundedMemory(t *testing.T) {
	for _, h := range hostileTraces() {
		t.Run(h.name, func(t *testing.T) {
			got := memtest.Run(t, 256, func() string {
				r := h.r()
				_, err := parseTrace(r, TopN, MaxTraceBytes)
				if c, ok := r.(io.Closer); ok {
					c.Close()
				}
				if err == nil {
					return "no error"
				}
				return err.Error()
			})
			if h.want != "" && !strings.Contains(got, h.want) {
				t.Fatalf("error %q, want one saying %q", got, h.want)
			}
			if h.want == "" && got != "no error" {
				t.Fatalf("a large valid trace failed: %s", got)
			}
		})
	}
}

// The decompressed size is bounded, not the file size: a small gzip that
// expands past the limit is ErrTraceTooLarge.
func TestTraceDecompressedLimit(t *testing.T) {
	ev := `{"ph":"X","cat":"kernel","name":"k","dur":1},`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.Copy(zw, &repeatReader{head: `{"traceEvents":[`, fill: ev, n: 100000, tail: `{}]}`})
	zw.Close()
	if gz.Len() > 1<<20 {
		t.Fatalf("the gzip is %d bytes", gz.Len())
	}
	_, err := parseTrace(bytes.NewReader(gz.Bytes()), TopN, 1<<20)
	if !errors.Is(err, ErrTraceTooLarge) {
		t.Fatalf("err = %v, want ErrTraceTooLarge", err)
	}
	s, err := parseTrace(bytes.NewReader(gz.Bytes()), TopN, 8<<20)
	if err != nil || s.Top[0].Calls != 100000 {
		t.Fatalf("under the limit: %v %+v", err, s)
	}
}

// Kernel names of a few kB, numbers in every form and ordinary nesting
// stay within the limits.
func TestTraceLimitsAcceptRealShapes(t *testing.T) {
	long := strings.Repeat("void cutlass::Kernel<cutlass::gemm::GemmUniversal<", 200)
	in := `{"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],"traceEvents":[` +
		`{"ph":"X","cat":"kernel","name":"` + long + `","dur":-0.5e+2,"args":{"grid":[[1,[2,[3]]]],"s":"a\"b\\"}},` +
		`{"ph":"X","cat":"kernel","name":"` + long + `","dur":1.25E3}]}`
	s, err := ParseTrace(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Top[0].SelfCUDAUs != 1250 {
		t.Fatalf("%+v", s.Top[0])
	}
}

// A key_averages table with a 200 MB line is read in bounded memory.
func TestHugeTableLineBoundedMemory(t *testing.T) {
	got := memtest.Run(t, 256, func() string {
		_, err := parseTable(&repeatReader{head: "Name  Self CPU\n", fill: "x", n: 200 << 20, tail: "\n"}, TopN)
		return fmt.Sprint(err)
	})
	if got == "<nil>" {
		t.Fatal("a table of one huge line gave a summary")
	}
}
