//go:build !linux

package sshtest

import (
	"errors"
	"net"
)

// NoDelay reads sshd's TCP_NODELAY on Linux only.
func (s *Server) NoDelay(client net.Addr) (bool, error) {
	return false, errors.New("sshtest: NoDelay needs Linux (pidfd_getfd)")
}
