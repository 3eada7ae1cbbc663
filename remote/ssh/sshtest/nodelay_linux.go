package sshtest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NoDelay reports whether sshd's side of the connection from client (the
// client's local address) has TCP_NODELAY set: the socket is found in
// /proc/net/tcp, its holder among the processes, and a copy of the
// descriptor taken with pidfd_getfd to read the option.
func (s *Server) NoDelay(client net.Addr) (bool, error) {
	ta, ok := client.(*net.TCPAddr)
	if !ok {
		return false, fmt.Errorf("not a TCP address: %v", client)
	}
	inode, err := socketInode(s.Port, ta.Port)
	if err != nil {
		return false, err
	}
	pid, fd, err := socketHolder(inode)
	if err != nil {
		return false, err
	}
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pfd)
	nfd, err := unix.PidfdGetfd(pfd, fd, 0)
	if err != nil {
		return false, fmt.Errorf("pidfd_getfd %d/%d: %w", pid, fd, err)
	}
	defer unix.Close(nfd)
	v, err := unix.GetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	return v != 0, err
}

// socketInode is the inode of the established IPv4 socket from local port
// lport to remote port rport.
func socketInode(lport, rport int) (string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", lport)
	peer := fmt.Sprintf(":%04X", rport)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 10 || fl[3] != "01" {
			continue
		}
		if strings.HasSuffix(fl[1], want) && strings.HasSuffix(fl[2], peer) {
			return fl[9], nil
		}
	}
	return "", fmt.Errorf("no established socket from port %d to port %d", lport, rport)
}

// socketHolder finds a process and descriptor holding socket inode.
func socketHolder(inode string) (pid, fd int, err error) {
	target := "socket:[" + inode + "]"
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name(), "fd")
		fds, _ := os.ReadDir(dir)
		for _, e := range fds {
			if l, _ := os.Readlink(filepath.Join(dir, e.Name())); l == target {
				n, _ := strconv.Atoi(e.Name())
				return pid, n, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("no process holds %s", target)
}
