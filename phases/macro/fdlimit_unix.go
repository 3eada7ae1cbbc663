//go:build unix

package macro

import (
	"errors"
	"syscall"
)

// fdLimit raises the process's open-file soft limit to its hard limit and
// returns the limit now in force (0 when it cannot be read).
func fdLimit() (soft, hard uint64) {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0, 0
	}
	if l.Cur < l.Max {
		raised := syscall.Rlimit{Cur: l.Max, Max: l.Max}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			l.Cur = l.Max
		}
	}
	return uint64(l.Cur), uint64(l.Max)
}

// isClientLimit reports whether err is this machine's own limit (out of
// file descriptors, ports or buffers), not the server's doing.
func isClientLimit(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.EADDRNOTAVAIL, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
