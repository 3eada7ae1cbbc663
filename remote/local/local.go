// Package local is remote.Host for this machine: commands run under sh in
// their own process group (so cancelling one stops every child), files are
// local files written atomically, Follow is tail -F, and dialing is plain TCP.
package local

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/localfs"
)

// Host implements remote.Host.
var _ remote.Host = (*Host)(nil)

// Host is this machine.
type Host struct {
	// Grace is how long a cancelled command gets between SIGTERM and
	// SIGKILL (default 2 s).
	Grace time.Duration
	// PollInterval is how often Follow looks at the file (default 150 ms).
	PollInterval time.Duration
}

// New returns the local host.
func New() *Host { return &Host{} }

// Name is "local".
func (h *Host) Name() string { return "local" }

func (h *Host) grace() time.Duration {
	if h.Grace > 0 {
		return h.Grace
	}
	return 2 * time.Second
}

func (h *Host) poll() time.Duration {
	if h.PollInterval > 0 {
		return h.PollInterval
	}
	return 150 * time.Millisecond
}

// ReadFile reads a local file.
func (h *Host) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.ReadFile(expandHome(path))
}

// expandHome turns a leading "~/" (or a lone "~") into the home directory,
// as the shell does for commands, so a path means the same file to Run and
// to the file methods.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, p[1:])
}

// WriteFile writes a local file with localfs.WriteFile: parent folders
// are created, a regular file is replaced atomically (fsynced temporary
// file renamed over it), a link's target is written, a device in place.
func (h *Host) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if mode == 0 {
		mode = 0o644
	}
	path = expandHome(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := localfs.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// DialContext dials TCP from this machine.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Close does nothing: the local host holds no resources.
func (h *Host) Close() error { return nil }

// ctxErr wraps the context's error with what was cancelled.
func ctxErr(ctx context.Context, what string) error {
	err := ctx.Err()
	if err == nil {
		err = context.Canceled
	}
	return fmt.Errorf("%s: %w", what, err)
}
