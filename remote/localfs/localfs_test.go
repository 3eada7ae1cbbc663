//go:build unix

package localfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// A regular file is replaced whole, with the mode asked for, and no
// temporary file stays behind.
func TestWriteFileRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "out.json")
	if err := WriteFile(p, []byte("one"), 0o600); err == nil {
		t.Fatal("written into a missing folder")
	}
	os.Mkdir(filepath.Dir(p), 0o755)
	if err := WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	entries, _ := os.ReadDir(filepath.Dir(p))
	if string(b) != "two" || st.Mode().Perm() != 0o600 || len(entries) != 1 {
		t.Fatalf("content %q, mode %v, %d entries", b, st.Mode(), len(entries))
	}
}

// A symbolic link is followed: its target is written and the link stays a
// link; a link to a file not there yet creates the file.
func TestWriteFileFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.json")
	os.WriteFile(target, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink("real.json", link)
	if err := WriteFile(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Lstat(link)
	b, _ := os.ReadFile(target)
	if st.Mode()&fs.ModeSymlink == 0 || string(b) != "new" {
		t.Fatalf("link mode %v, target %q", st.Mode(), b)
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "later.json"), dangling)
	if err := WriteFile(dangling, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ = os.Lstat(dangling)
	if b, _ := os.ReadFile(filepath.Join(dir, "later.json")); string(b) != "x" || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("dangling link: %q, %v", b, st.Mode())
	}
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	if err := WriteFile(loop, []byte("x"), 0o644); err == nil {
		t.Fatal("a link loop was written")
	}
}

// A FIFO is written in place (a reader gets the data) and stays a FIFO.
func TestWriteFileFIFOInPlace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	mkfifo(t, p)
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := WriteFile(p, []byte("doc"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "doc" {
			t.Fatalf("reader got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader got nothing")
	}
	if st, _ := os.Lstat(p); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO became %v", st.Mode())
	}
}

// A character device (a null device made in a temporary folder, as root)
// is written in place and stays a device; /dev/null itself is written.
func TestWriteFileDeviceInPlace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	p := filepath.Join(t.TempDir(), "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	if err := WriteFile(p, []byte("doc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(p); st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("the device became %v", st.Mode())
	}
	if err := WriteFile("/dev/null", []byte("doc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat("/dev/null"); st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null became %v", st.Mode())
	}
}

func TestWriteFileDirectory(t *testing.T) {
	if err := WriteFile(t.TempDir(), []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("got %v", err)
	}
}

func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	for _, c := range []struct {
		path, want string
		mkdirs     bool
	}{
		{filepath.Join(dir, "new.json"), "", false},
		{filepath.Join(dir, "a", "b", "new.json"), "", true},
		{filepath.Join(dir, "a", "b", "new.json"), "no directory " + filepath.Join(dir, "a", "b"), false},
		{file, "", false},
		{fifo, "", false},
		{dir, "is a directory", true},
		{filepath.Join(file, "x"), "is not a directory", false},
		{filepath.Join(file, "a", "x"), "is not a directory", true},
	} {
		err := CheckOutput(c.path, c.mkdirs)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the check left %d entries", len(entries))
	}
}

// OpenInput refuses a FIFO (without blocking), a link to one, a device
// and a folder, and opens a regular file or a link to one.
func TestOpenInput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	link := filepath.Join(dir, "link")
	os.Symlink(fifo, link)
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	for _, p := range []string{fifo, link, zero, dir} {
		done := make(chan error, 1)
		go func() {
			f, err := OpenInput(p)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !IsNotRegular(err) || !strings.Contains(err.Error(), p+" is a") {
				t.Errorf("%s: %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: OpenInput blocked", p)
		}
	}
	reg := filepath.Join(dir, "reg")
	os.WriteFile(reg, []byte("x"), 0o644)
	rl := filepath.Join(dir, "reglink")
	os.Symlink(reg, rl)
	for _, p := range []string{reg, rl} {
		f, err := OpenInput(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// Same sees one file through a link, a hard link and "..", and a new path
// through a linked folder; CheckOverlap names the pair.
func TestSameAndOverlap(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	os.WriteFile(a, nil, 0o644)
	os.Symlink(a, filepath.Join(dir, "sym"))
	os.Link(a, filepath.Join(dir, "hard"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "sublink"))
	same := [][2]string{
		{a, filepath.Join(dir, "sym")},
		{a, filepath.Join(dir, "hard")},
		{a, filepath.Join(dir, "sub", "..", "a")},
		{filepath.Join(dir, "sub", "new"), filepath.Join(dir, "sublink", "new")},
	}
	for _, p := range same {
		if !Same(p[0], p[1]) {
			t.Errorf("%s and %s: not the same", p[0], p[1])
		}
	}
	if Same(a, filepath.Join(dir, "b")) {
		t.Error("a and b are the same")
	}
	err := CheckOverlap([]Named{{Name: "--json", Path: filepath.Join(dir, "sym")}}, []Named{{Name: "the journal", Path: a}})
	if err == nil || err.Error() != "--json "+filepath.Join(dir, "sym")+" is also the journal: refusing to write over it" {
		t.Fatalf("got %v", err)
	}
	err = CheckOverlap([]Named{{Name: "--json", Path: filepath.Join(dir, "x")}, {Name: "--jsonl", Path: filepath.Join(dir, "sub", "..", "x")}}, nil)
	if err == nil || !strings.Contains(err.Error(), "is also --jsonl") {
		t.Fatalf("got %v", err)
	}
	if err := CheckOverlap([]Named{{Name: "--json", Path: "-"}, {Name: "--jsonl", Path: "/dev/null"}}, []Named{{Name: "x", Path: "/dev/null"}, {Name: "y", Path: filepath.Join(dir, "absent")}}); err != nil {
		t.Fatalf("stdout and a device: %v", err)
	}
}

// UnwrapPath drops the path an os error repeats, and keeps a wrapping
// error's words.
func TestUnwrapPath(t *testing.T) {
	_, err := os.Open(filepath.Join(t.TempDir(), "missing"))
	if got := UnwrapPath(err); got != fs.ErrNotExist && got.Error() != "no such file or directory" {
		t.Errorf("UnwrapPath(%v) = %v", err, got)
	}
	lerr := os.Link(filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b"))
	if got := UnwrapPath(lerr); strings.Contains(got.Error(), "link ") {
		t.Errorf("UnwrapPath(%v) = %v", lerr, got)
	}
	wrapped := fmt.Errorf("the trace: %w", err)
	if got := UnwrapPath(wrapped); got != wrapped {
		t.Errorf("UnwrapPath(%v) = %v", wrapped, got)
	}
}

// An input inside an output's companions folder is an overlap, through a
// link to the folder too; one beside it is not.
func TestOverlapCompanions(t *testing.T) {
	dir := t.TempDir()
	charts := filepath.Join(dir, "x.charts")
	if err := os.Mkdir(charts, 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(charts, "pareto.svg")
	beside := filepath.Join(dir, "b.json")
	for _, p := range []string{in, beside} {
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "via")
	if err := os.Symlink(charts, link); err != nil {
		t.Fatal(err)
	}
	out := []Named{{Name: "-o", Path: filepath.Join(dir, "x.md"), Companions: charts}}
	for _, p := range []string{in, filepath.Join(link, "pareto.svg")} {
		if err := CheckOverlap(out, []Named{{Name: "an input", Path: p}}); err == nil || !strings.Contains(err.Error(), "charts folder") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := CheckOverlap(out, []Named{{Name: "an input", Path: beside}}); err != nil {
		t.Errorf("beside: %v", err)
	}
}
