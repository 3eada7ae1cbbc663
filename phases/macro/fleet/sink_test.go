package fleet

import (
	"bytes"
	"strings"
	"testing"
)

// Two agents' records written in pieces that end inside a line reach the
// shared writer as whole lines: none is cut by the other's.
func TestAgentsRecordsStayWholeLines(t *testing.T) {
	var out bytes.Buffer
	shared := &lockedWriter{w: &out}
	a, b := &lineWriter{to: shared}, &lineWriter{to: shared}
	a.Write([]byte(`{"agent":"a","n":`))
	b.Write([]byte(`{"agent":"b","n":`))
	a.Write([]byte("1}\n{\"agent\":\"a\","))
	b.Write([]byte("2}\n"))
	a.Write([]byte("\"n\":3}\n"))
	want := "{\"agent\":\"a\",\"n\":1}\n{\"agent\":\"b\",\"n\":2}\n{\"agent\":\"a\",\"n\":3}\n"
	if got := out.String(); got != want {
		t.Fatalf("shared writer got\n%s\nwant\n%s", got, want)
	}
	if strings.Count(out.String(), "\n") != 3 {
		t.Fatal("lines lost")
	}
}
