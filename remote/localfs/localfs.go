// Package localfs is how profdeck reads and writes files on this machine:
// one atomic writer for every output (a temporary file beside the target,
// fsynced, renamed over it, the folder fsynced), which follows symbolic
// links and writes in place what is not a regular file (/dev/null, a FIFO,
// /dev/stdout), so an output never replaces a device or a link; inputs
// opened only when they are regular files, so a FIFO or /dev/zero never
// hangs a command; and the checks that an output can be written and is not
// one of the inputs, made before any work starts.
package localfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks is how many symbolic links are followed before giving up (as
// the kernel's ELOOP).
const maxLinks = 40

// Target is the path a write to path reaches: symbolic links are followed,
// also when the last one points to a file that does not exist yet.
func Target(path string) (string, error) {
	for i := 0; i < maxLinks; i++ {
		st, err := os.Lstat(path)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("too many levels of symbolic links")
}

// WriteFile writes data to path so that a reader never sees half of it: a
// regular file (or a new one) is replaced atomically: the data goes to a
// temporary file in the same folder, which is fsynced and renamed over the
// path, and the folder is fsynced. A symbolic link is followed (its target
// is written, the link kept); what is neither a regular file nor a folder
// (a device such as /dev/null, a FIFO) is written in place. The folder must
// exist. Errors do not repeat the temporary file's name.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	return write(path, data, mode, true)
}

// WriteNew is WriteFile for a path that must not exist yet: the temporary
// file is linked to the path rather than renamed over it, so a file that
// appeared meanwhile is never replaced (the error is then fs.ErrExist).
func WriteNew(path string, data []byte, mode os.FileMode) error {
	return write(path, data, mode, false)
}

func write(path string, data []byte, mode os.FileMode, replace bool) error {
	if !replace {
		if _, err := os.Lstat(path); err == nil {
			return fs.ErrExist
		}
	}
	if st, err := os.Stat(path); err == nil { // through links, /proc's too
		switch {
		case st.IsDir():
			return errors.New("is a directory")
		case !st.Mode().IsRegular():
			return writeInPlace(path, data)
		}
	}
	target, err := Target(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+TempInfix+"*")
	if err != nil {
		return fmt.Errorf("create a temporary file in %s: %w", dir, UnwrapPath(err))
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return UnwrapPath(err)
	}
	if err := f.Chmod(mode); err != nil {
		return UnwrapPath(err)
	}
	if err := f.Sync(); err != nil {
		return UnwrapPath(err)
	}
	if err := f.Close(); err != nil {
		return UnwrapPath(err)
	}
	if replace {
		err = os.Rename(tmp, target)
	} else if err = os.Link(tmp, target); err == nil {
		os.Remove(tmp)
	}
	if err != nil {
		return UnwrapPath(err)
	}
	ok = true
	SyncDir(dir)
	return nil
}

// TempInfix is in the name of WriteFile's temporary files: ".NAME.tmp-*"
// beside NAME (RemoveStaleTemps finds those a crash left).
const TempInfix = ".tmp-"

// RemoveStaleTemps deletes the temporary files a crash left beside path.
func RemoveStaleTemps(path string) {
	if t, err := Target(path); err == nil {
		path = t
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+TempInfix+"*"))
	for _, m := range matches {
		os.Remove(m)
	}
}

// writeInPlace writes data to a file that is not a regular one (a device,
// a FIFO): opened for writing as it is, never replaced.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return UnwrapPath(err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return UnwrapPath(err)
}

// SyncDir fsyncs a folder so that a file created or renamed in it survives
// a power cut. Errors are ignored: not every filesystem allows it.
func SyncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}

// UnwrapPath drops the path an *os.PathError or *os.LinkError repeats when
// the caller's message names the file already (a temporary name would
// differ on every try). An error that wraps one keeps its own words.
func UnwrapPath(err error) error {
	switch e := err.(type) {
	case *os.PathError:
		return e.Err
	case *os.LinkError:
		return e.Err
	}
	return err
}

// CheckOutput says why path could not be written by WriteFile, without
// leaving anything behind: a folder, a parent that is missing or a file, a
// folder that takes no new file. A device or a FIFO is fine (written in
// place). With createDirs, missing parent folders are fine when the
// nearest existing one takes a new entry (for a caller that creates them).
func CheckOutput(path string, createDirs bool) error {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return errors.New("is a directory")
		}
		if !st.Mode().IsRegular() {
			return nil
		}
	}
	target, err := Target(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", dir)
			}
			break
		}
		if !createDirs && errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no directory %s", dir)
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return UnwrapPath(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return UnwrapPath(err)
		}
		dir = parent
	}
	f, err := os.CreateTemp(dir, ".profdeck-check-*")
	if err != nil {
		return fmt.Errorf("cannot create a file in %s: %w", dir, UnwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// NotRegularError is an input that is not a regular file.
type NotRegularError struct {
	Path string
	What string // "a FIFO", "a device", "a directory", …
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.What)
}

// OpenInput opens path for reading when it is a regular file (after
// following links). A FIFO, a device such as /dev/zero, a socket or a
// folder is refused with a NotRegularError: reading one could block
// forever or never end.
func OpenInput(path string) (*os.File, error) {
	if err := CheckInput(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() { // replaced between the two looks
		f.Close()
		return nil, &NotRegularError{Path: path, What: kind(st.Mode())}
	}
	return f, nil
}

// CheckInput says why path cannot be read as an input: it does not exist,
// or it is not a regular file (NotRegularError).
func CheckInput(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: UnwrapPath(err)} // said as opening it
	}
	if !st.Mode().IsRegular() {
		return &NotRegularError{Path: path, What: kind(st.Mode())}
	}
	return nil
}

// kind names a file's type for messages.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// Same reports whether a and b name the same file: the same inode when
// both exist, else the same path once links and ".." are resolved.
// Writing an output that is Same as an input destroys the input.
func Same(a, b string) bool {
	sa, ea := os.Stat(a)
	sb, eb := os.Stat(b)
	if ea == nil && eb == nil {
		return os.SameFile(sa, sb)
	}
	return resolved(a) == resolved(b)
}

// resolved is path made absolute with its links followed, as far as it
// exists.
func resolved(path string) string {
	if t, err := Target(path); err == nil {
		path = t
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	dir, rest := abs, ""
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// Overlap is an output that is also an input.
type Overlap struct {
	Output, Input string // the flags or roles, e.g. "--json", "the journal"
	Path          string
}

func (o *Overlap) Error() string {
	return fmt.Sprintf("%s %s is also %s: refusing to write over it", o.Output, o.Path, o.Input)
}

// Named is a path with the flag or role that names it in messages.
type Named struct {
	Name, Path string
	Output     bool // written (a journal is read and written: an output)
	// Companions is the folder an output writes beside itself (a
	// notebook's charts): no input may lie in it.
	Companions string
}

// Under reports whether path lies in the folder dir (links and ".."
// resolved as far as they exist).
func Under(path, dir string) bool {
	p, d := resolved(path), resolved(dir)
	return p != d && strings.HasPrefix(p, d+string(filepath.Separator))
}

// CheckOverlap refuses any output that is the same file as an input or as
// another output. "-", empty paths, inputs that do not exist and what is
// not a regular file (a device such as /dev/null is written in place,
// never replaced) are skipped.
func CheckOverlap(outputs, inputs []Named) error {
	use := func(n Named) bool {
		if n.Path == "" || n.Path == "-" {
			return false
		}
		st, err := os.Stat(n.Path)
		if err != nil {
			return n.Output
		}
		return st.Mode().IsRegular()
	}
	for i := range outputs {
		outputs[i].Output = true
	}
	for i, o := range outputs {
		if !use(o) {
			continue
		}
		for _, in := range inputs {
			if use(in) && Same(o.Path, in.Path) {
				return &Overlap{Output: o.Name, Input: in.Name, Path: o.Path}
			}
			if o.Companions != "" && use(in) && Under(in.Path, o.Companions) {
				return &Overlap{Output: o.Name + "'s charts folder", Input: in.Name + " (" + in.Path + ")", Path: o.Companions}
			}
		}
		for _, o2 := range outputs[i+1:] {
			if use(o2) && Same(o.Path, o2.Path) {
				return &Overlap{Output: o.Name, Input: o2.Name, Path: o.Path}
			}
		}
	}
	return nil
}

// IsNotRegular reports whether err is an input refused for not being a
// regular file.
func IsNotRegular(err error) bool {
	var nr *NotRegularError
	return errors.As(err, &nr)
}
