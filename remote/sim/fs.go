package sim

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// memFS is the simulated host's filesystem: files in memory, each with an
// inode number so a replaced file can be told from a grown one.
type memFS struct {
	mu      sync.Mutex
	files   map[string]*memFile
	dirs    map[string]bool
	nextIno uint64
	changed chan struct{} // closed and replaced on every change
}

type memFile struct {
	data    []byte
	mode    os.FileMode
	ino     uint64
	modTime time.Time
}

func newMemFS() *memFS {
	return &memFS{files: map[string]*memFile{}, dirs: map[string]bool{"/": true},
		nextIno: 100, changed: make(chan struct{})}
}

func clean(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/root/" + p // the simulated shell's working directory
	}
	return path.Clean(p)
}

// notifyLocked wakes every follower. Called with mu held.
func (m *memFS) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memFS) mkdirAll(dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mkdirAllLocked(clean(dir))
}

func (m *memFS) mkdirAllLocked(dir string) {
	for d := dir; ; d = path.Dir(d) {
		m.dirs[d] = true
		if d == "/" {
			return
		}
	}
}

func (m *memFS) read(p string) ([]byte, error) {
	p = clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[p]
	if !ok {
		if m.dirs[p] {
			return nil, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("is a directory")}
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return bytes.Clone(f.data), nil
}

func (m *memFS) exists(p string) bool {
	p = clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.files[p]
	return ok || m.dirs[p]
}

// write replaces the file's content (a new inode, like an atomic rename).
func (m *memFS) write(p string, data []byte, mode os.FileMode) error {
	p = clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[p] {
		return &fs.PathError{Op: "write", Path: p, Err: fmt.Errorf("is a directory")}
	}
	if mode == 0 {
		mode = 0o644
	}
	m.mkdirAllLocked(path.Dir(p))
	m.nextIno++
	m.files[p] = &memFile{data: bytes.Clone(data), mode: mode, ino: m.nextIno, modTime: time.Now()}
	m.notifyLocked()
	return nil
}

// appendTo appends to a file, creating it when missing.
func (m *memFS) appendTo(p string, data []byte) {
	p = clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[p]
	if !ok {
		m.mkdirAllLocked(path.Dir(p))
		m.nextIno++
		f = &memFile{mode: 0o644, ino: m.nextIno}
		m.files[p] = f
	}
	f.data = append(f.data, data...)
	f.modTime = time.Now()
	m.notifyLocked()
}

func (m *memFS) remove(p string) bool {
	p = clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[p]; !ok {
		return false
	}
	delete(m.files, p)
	m.notifyLocked()
	return true
}

// list returns the names in dir (files and directories), sorted, or false
// when dir does not exist.
func (m *memFS) list(dir string) ([]string, bool) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[dir]; ok {
		return []string{path.Base(dir)}, true
	}
	if !m.dirs[dir] {
		return nil, false
	}
	seen := map[string]bool{}
	for p := range m.files {
		if path.Dir(p) == dir {
			seen[path.Base(p)] = true
		}
	}
	for p := range m.dirs {
		if p != dir && path.Dir(p) == dir {
			seen[path.Base(p)] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, true
}

// snapshot returns the file's inode, and its bytes from offset on, and the
// channel that is closed at the next change.
func (m *memFS) snapshot(p string, from int64) (ino uint64, size int64, tail []byte, changed <-chan struct{}, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed = m.changed
	f, ok := m.files[p]
	if !ok {
		return 0, 0, nil, changed, false
	}
	size = int64(len(f.data))
	if from < size && from >= 0 {
		tail = bytes.Clone(f.data[from:])
	}
	return f.ino, size, tail, changed, true
}

// follow is tail -F on the in-memory filesystem.
func (m *memFS) follow(ctx context.Context, p string, from int64, out func(remote.FollowEvent)) error {
	p = clean(p)
	if from < 0 {
		from = 0
	}
	var curIno uint64
	offset := from
	started := false
	for {
		ino, size, tail, changed, ok := m.snapshot(p, offset)
		if ok {
			switch {
			case started && ino != curIno:
				offset = 0
				out(remote.FollowEvent{Reset: true, Note: p + " was replaced; reading it from the start"})
				curIno = ino
				continue
			case size < offset:
				offset = 0
				curIno = ino
				started = true
				out(remote.FollowEvent{Reset: true, Note: fmt.Sprintf("%s was truncated (now %d bytes); reading it from the start", p, size)})
				continue
			}
			curIno, started = ino, true
			for {
				i := bytes.IndexByte(tail, '\n')
				if i < 0 {
					break
				}
				line := strings.TrimSuffix(string(tail[:i]), "\r")
				tail = tail[i+1:]
				offset += int64(i + 1)
				out(remote.FollowEvent{Line: line, Offset: offset})
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("follow %s: %w", p, ctx.Err())
		case <-changed:
		}
	}
}
