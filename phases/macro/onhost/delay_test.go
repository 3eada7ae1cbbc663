package onhost_test

import (
	"io"
	"net"
	"testing"
	"time"
)

// delayProxy forwards TCP connections to target, holding every chunk for
// oneWay in each direction: a network between the jump host and the GPU
// host, RTT = 2×oneWay, on loopback. It stops when the test ends.
func delayProxy(tb testing.TB, target string, oneWay time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			tb.Cleanup(func() { c.Close(); t.Close() })
			go delayed(t, c, oneWay)
			go delayed(c, t, oneWay)
		}
	}()
	return ln.Addr().String()
}

// delayed copies src to dst, each chunk written oneWay after it was read,
// in order.
func delayed(dst, src net.Conn, oneWay time.Duration) {
	type chunk struct {
		b   []byte
		due time.Time
	}
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{buf[:n], time.Now().Add(oneWay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	io.Copy(io.Discard, src)
}
