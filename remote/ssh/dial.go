package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"
)

// ConnectError is a failed connection attempt. Permanent errors (host key,
// authentication, configuration) are never retried.
type ConnectError struct {
	Host      string // label of the host that failed, "gpu1 (10.0.0.5:22)"
	Via       string // the target's label when Host is a jump host
	Err       error
	Permanent bool
}

// Error names the host and why it could not be reached.
func (e *ConnectError) Error() string {
	if e.Via != "" {
		return fmt.Sprintf("ssh %s: via jump host %s: %v", e.Via, e.Host, e.Err)
	}
	return fmt.Sprintf("ssh %s: %v", e.Host, e.Err)
}

// Unwrap returns the underlying dial, handshake or authentication error.
func (e *ConnectError) Unwrap() error { return e.Err }

// isPermanent reports whether retrying err cannot help.
func isPermanent(err error) bool {
	var ce *ConnectError
	return errors.As(err, &ce) && ce.Permanent
}

// conn is one live SSH connection to the target, through its jump hosts.
type conn struct {
	client  *gossh.Client
	hops    []*gossh.Client // jump hosts, outermost first
	done    chan struct{}   // closed when the connection is gone
	slots   chan struct{}   // one per open command session
	started time.Time

	mu     sync.Mutex
	err    error // why it ended
	sftp   *sftp.Client
	noSFTP bool

	// nodelay says how the server side was made to send without delay
	// (Nodelay*), nodelayErr why it could not be.
	nodelay    string
	nodelayErr error
}

// fail closes the connection, recording why.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.closeAll()
}

func (c *conn) closeAll() {
	c.mu.Lock()
	s := c.sftp
	c.sftp = nil
	c.mu.Unlock()
	if s != nil {
		s.Close()
	}
	if c.client != nil {
		c.client.Close()
	}
	for i := len(c.hops) - 1; i >= 0; i-- {
		c.hops[i].Close()
	}
}

// reason says why the connection ended.
func (c *conn) reason() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return errors.New("connection closed")
	}
	return c.err
}

// maxSessions is how many command sessions run at once on a connection:
// below sshd's default MaxSessions of 10, leaving room for the SFTP
// subsystem and the sessions that stop commands.
const maxSessions = 8

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// connect opens a new connection through every jump host.
func (h *Host) connect(ctx context.Context) (*conn, error) {
	ct := h.connectTimeout(h.cfg)
	nd := &net.Dialer{Timeout: ct, KeepAlive: 30 * time.Second}
	var dial dialFunc = nd.DialContext
	c := &conn{done: make(chan struct{}), slots: make(chan struct{}, maxSessions), started: time.Now()}
	chain := append(append([]*hostConfig{}, h.cfg.Jumps...), h.cfg)
	for i, hc := range chain {
		cl, err := h.handshake(ctx, hc, dial)
		if err != nil {
			c.closeAll()
			var ce *ConnectError
			if i < len(chain)-1 && errors.As(err, &ce) {
				ce.Via = h.cfg.Label()
			}
			return nil, err
		}
		if i < len(chain)-1 {
			c.hops = append(c.hops, cl)
			dial = cl.DialContext
		} else {
			c.client = cl
		}
	}
	labels := make([]string, len(chain))
	for i, hc := range chain {
		labels[i] = hc.Label()
	}
	c.nodelay, c.nodelayErr = nudgeAll(append(append([]*gossh.Client{}, c.hops...), c.client), labels)
	go func() {
		err := c.client.Wait()
		c.mu.Lock()
		if c.err == nil {
			if err == nil || errors.Is(err, io.EOF) {
				err = errors.New("connection closed by the server")
			}
			c.err = err
		}
		c.mu.Unlock()
		c.closeAll()
		close(c.done)
	}()
	for i, cl := range c.hops {
		go h.keepalive(c, cl, chain[i], false)
	}
	go h.keepalive(c, c.client, h.cfg, true)
	return c, nil
}

func (h *Host) connectTimeout(hc *hostConfig) time.Duration {
	if h.opt.ConnectTimeout > 0 {
		return h.opt.ConnectTimeout
	}
	if hc.ConnectTimeout > 0 {
		return hc.ConnectTimeout
	}
	return 10 * time.Second
}

// handshake dials hc with dial and completes the SSH handshake under a
// deadline (ssh.Dial's Timeout covers only the TCP connect). The deadline
// is lifted while the operator answers a question.
func (h *Host) handshake(ctx context.Context, hc *hostConfig, dial dialFunc) (*gossh.Client, error) {
	label := hc.Label()
	fail := func(permanent bool, err error) error {
		return &ConnectError{Host: label, Err: err, Permanent: permanent}
	}
	tctx, cancel := context.WithTimeout(ctx, h.connectTimeout(hc))
	nc, err := dial(tctx, "tcp", hc.Addr())
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fail(true, ctx.Err())
		}
		return nil, fail(false, fmt.Errorf("connect: %w", err))
	}
	hsTimeout := h.opt.HandshakeTimeout
	if hsTimeout <= 0 {
		hsTimeout = 20 * time.Second
	}
	nc.SetDeadline(time.Now().Add(hsTimeout))
	hold := func() func() {
		nc.SetDeadline(time.Time{})
		return func() { nc.SetDeadline(time.Now().Add(hsTimeout)) }
	}
	var prompt promptFunc
	if h.opt.Prompt != nil {
		prompt = func(q string, secret bool) (string, error) {
			defer hold()()
			return h.opt.Prompt(q, secret)
		}
	}
	hk := newHostKeys(hc, &h.opt, &h.khMu, prompt)
	cb, err := hk.callback(label)
	if err != nil {
		nc.Close()
		return nil, fail(true, err)
	}
	plan, err := planAuth(hc, &h.opt, h.keys, asker{prompt: h.opt.Prompt, hold: hold})
	if err != nil {
		nc.Close()
		return nil, fail(true, err)
	}
	defer plan.close()
	cfg := &gossh.ClientConfig{
		User:              hc.User,
		Auth:              []gossh.AuthMethod{gossh.PublicKeys(plan.signers...)},
		HostKeyCallback:   cb,
		HostKeyAlgorithms: hk.algorithms(hc.Addr()),
		Timeout:           h.connectTimeout(hc),
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	ncc, chans, reqs, err := gossh.NewClientConn(nc, hc.Addr(), cfg)
	stop()
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, fail(true, ctx.Err())
		}
		var hke *HostKeyError
		if errors.As(err, &hke) {
			return nil, fail(true, hke)
		}
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "ssh: handshake failed: ")
		if strings.Contains(msg, "unable to authenticate") {
			return nil, fail(true, fmt.Errorf("authentication as %q failed (%s)", hc.User, plan.describe()))
		}
		if strings.Contains(msg, "identity file") || strings.Contains(msg, "host key") || strings.Contains(msg, "known hosts") {
			return nil, fail(true, errors.New(msg))
		}
		return nil, fail(false, fmt.Errorf("handshake: %s", msg))
	}
	nc.SetDeadline(time.Time{})
	return gossh.NewClient(ncc, chans, reqs), nil
}

// keepaliveTimes gives the interval between keepalives and how long to
// wait for each reply.
func (h *Host) keepaliveTimes(hc *hostConfig) (interval, timeout time.Duration) {
	interval, timeout = 15*time.Second, 15*time.Second
	if hc.AliveInterval > 0 {
		interval = hc.AliveInterval
		timeout = hc.AliveInterval * time.Duration(hc.AliveCountMax)
	}
	if h.opt.KeepAlive > 0 {
		interval = h.opt.KeepAlive
	}
	if h.opt.KeepAliveTimeout > 0 {
		timeout = h.opt.KeepAliveTimeout
	}
	return interval, timeout
}

// keepalive sends keepalive@openssh.com every interval and closes the
// connection when a reply does not come in time. For the target it reports
// the round-trip time.
func (h *Host) keepalive(c *conn, cl *gossh.Client, hc *hostConfig, report bool) {
	interval, timeout := h.keepaliveTimes(hc)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		rtt, err := ping(cl, timeout)
		if err != nil {
			c.fail(fmt.Errorf("keepalive to %s: %w", hc.Label(), err))
			return
		}
		if report {
			h.setRTT(c, rtt)
		}
	}
}

// ping sends one keepalive and waits up to timeout for the reply. OpenSSH
// answers with a failure reply, which still means the link is alive.
func ping(cl *gossh.Client, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	ch := make(chan error, 1)
	go func() {
		_, _, err := cl.SendRequest("keepalive@openssh.com", true, nil)
		ch <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-ch:
		return time.Since(start), err
	case <-t.C:
		return 0, fmt.Errorf("no reply in %s", timeout)
	}
}
