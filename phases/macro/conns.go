package macro

import (
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// conns is the sweep's dialer: it counts the connections open to the
// server and opens, before a closed-loop level starts, the ones the level
// will need beyond those, so that no measured request waits for its
// connection. A level's first C requests start together; opening C
// connections at that moment is C connects (through an SSH host, C
// channel opens through one sshd, each a round trip) inside their TTFT,
// which the server never sees. The pool's connections are handed to the
// HTTP transport, in the order they were opened, as it asks for new ones.
type conns struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	addr string // the server's host:port, as the transport dials it

	open  atomic.Int64 // connections dialed and not yet closed, ready ones included
	mu    sync.Mutex
	ready []net.Conn // opened ahead, not yet taken by the transport
}

// openAhead bounds the connects run at once while a level's connections
// are opened ahead.
const openAhead = 32

func newConns(dial func(ctx context.Context, network, addr string) (net.Conn, error), serverURL string) *conns {
	return &conns{dial: dial, addr: dialAddr(serverURL)}
}

// dialAddr is the host:port the HTTP transport dials for u ("" when u does
// not parse).
func dialAddr(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return ""
	}
	port := p.Port()
	if port == "" {
		port = "80"
		if p.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(p.Hostname(), port)
}

// DialContext hands out a connection opened ahead when one is ready for
// addr, else dials.
func (c *conns) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr == c.addr && network == "tcp" {
		c.mu.Lock()
		if n := len(c.ready); n > 0 {
			nc := c.ready[0]
			c.ready = c.ready[1:]
			c.mu.Unlock()
			return nc, nil
		}
		c.mu.Unlock()
	}
	return c.dialCounted(ctx, network, addr)
}

func (c *conns) dialCounted(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := c.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.open.Add(1)
	return &countedConn{Conn: nc, open: &c.open}, nil
}

// fill opens connections to the server until n are open, at most openAhead
// connects at a time, and reports how many it opened. One that fails is
// left to the request that needs it (which then fails or dials itself),
// so nothing here fails the sweep.
func (c *conns) fill(ctx context.Context, n int) int {
	want := n - int(c.open.Load())
	if c.addr == "" || want <= 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sem := make(chan struct{}, openAhead)
	var wg sync.WaitGroup
	var opened atomic.Int64
	for range want {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			nc, err := c.dialCounted(ctx, "tcp", c.addr)
			if err != nil {
				return
			}
			opened.Add(1)
			c.mu.Lock()
			c.ready = append(c.ready, nc)
			c.mu.Unlock()
		}()
	}
	wg.Wait()
	return int(opened.Load())
}

// close closes the connections opened ahead and never taken.
func (c *conns) close() {
	c.mu.Lock()
	ready := c.ready
	c.ready = nil
	c.mu.Unlock()
	for _, nc := range ready {
		nc.Close()
	}
}

// countedConn takes itself off the open count when closed.
type countedConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}
