// Package local is remote.Host for this machine: commands run under sh, files
// are local files, and dialing is plain TCP.
package local

import (
	"context"
	"errors"
	"io"
	"net"
	"os"

	"github.com/profdeck/profdeck/remote"
)

// Host is this machine.
type Host struct{}

// New returns the local host.
func New() *Host { return &Host{} }

// Name is "local".
func (h *Host) Name() string { return "local" }

// Run is not built yet.
func (h *Host) Run(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	return errors.New("local: not built yet")
}

// ReadFile reads a local file.
func (h *Host) ReadFile(ctx context.Context, path string) ([]byte, error) { return os.ReadFile(path) }

// WriteFile writes a local file.
func (h *Host) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	return os.WriteFile(path, data, mode)
}

// Follow is not built yet.
func (h *Host) Follow(ctx context.Context, path string, from int64, out func(remote.FollowEvent)) error {
	return errors.New("local: not built yet")
}

// DialContext dials TCP.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Close does nothing.
func (h *Host) Close() error { return nil }
