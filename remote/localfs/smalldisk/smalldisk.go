// Package smalldisk gives tests a small filesystem that fills up: a tmpfs
// mounted for the test (tests run as root here and in CI), so that a write
// fails with "no space left on device" the way a full disk or a quota does.
package smalldisk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Mount mounts a tmpfs of size bytes on a new folder and returns it; it is
// unmounted when the test ends. Where mounting is not permitted (not root,
// no tmpfs), the test is skipped, saying why.
func Mount(t testing.TB, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("SKIPPED: a small tmpfs for a full disk cannot be mounted here (%v: %s); run as root to test it", err, out)
	}
	t.Cleanup(func() {
		// A process of the test may still be ending: try a few times,
		// then detach the mount (it goes when the last user does).
		for range 20 {
			if exec.Command("umount", dir).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file in dir until its filesystem is full.
func Fill(t testing.TB, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			return
		}
	}
}
