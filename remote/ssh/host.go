// Package ssh is the SSH implementation of remote.Host: it connects like
// OpenSSH (~/.ssh/config, ProxyJump, ssh-agent, identity files), always
// verifies host keys, keeps the connection alive and reconnects with
// backoff, runs commands so that cancelling them leaves nothing behind on
// the host, follows files across reconnects, uploads files and dials TCP
// through the connection.
package ssh

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// Options configure a connection. The zero value connects like ssh would.
type Options struct {
	Identity         string // identity file offered before the config's ones
	KnownHosts       string // known_hosts file read and appended to, instead of the config's
	SSHConfig        string // ssh config file instead of ~/.ssh/config and /etc/ssh/ssh_config
	AcceptNewHostKey bool   // add an unknown host key to known_hosts (OpenSSH's accept-new)
	// Prompt asks the operator a question (unknown host key, passphrase);
	// nil when headless.
	Prompt func(question string, secret bool) (string, error)

	KeepAlive        time.Duration // between keepalives; default 15 s (or ServerAliveInterval)
	KeepAliveTimeout time.Duration // wait for a keepalive reply; default 15 s
	ConnectTimeout   time.Duration // TCP connect; default 10 s (or ConnectTimeout)
	HandshakeTimeout time.Duration // SSH handshake; default 20 s
	BackoffMin       time.Duration // first reconnect delay; default 500 ms
	BackoffMax       time.Duration // cap on the reconnect delay; default 30 s
	KillGrace        time.Duration // TERM to KILL on cancel; default 3 s
}

// Host is a remote.Host reached over SSH. It reconnects by itself; its
// connection state is reported on States.
type Host struct {
	name string
	cfg  *hostConfig
	opt  Options
	keys *keyring
	khMu sync.Mutex

	mu      sync.Mutex
	cur     *conn         // nil while down
	ready   chan struct{} // closed when cur is set, or on failure/close
	failed  error         // permanent failure; every call returns it
	closed  bool
	orphans []int // process groups left by a lost connection, killed on reconnect

	stMu     sync.Mutex
	states   chan remote.State
	stClosed bool

	cancel context.CancelFunc
	done   chan struct{}
}

var (
	_ remote.Host          = (*Host)(nil)
	_ remote.StateReporter = (*Host)(nil)
	_ remote.Forwarder     = (*Host)(nil)
)

// ErrClosed is returned by calls on a closed Host.
var ErrClosed = errors.New("ssh: host closed")

// Dial resolves target ("alias" or "[user@]host[:port]") and connects. A
// first connection that fails is an error; later drops are reconnected.
func Dial(ctx context.Context, target string, opt Options) (*Host, error) {
	sc, err := loadSSHConfig(opt.SSHConfig)
	if err != nil {
		return nil, &remote.SpecError{Err: err}
	}
	cfg, err := sc.resolve(target)
	if err != nil {
		return nil, &remote.SpecError{Err: err}
	}
	h := &Host{
		name:   cfg.Alias,
		cfg:    cfg,
		opt:    opt,
		keys:   &keyring{},
		ready:  make(chan struct{}),
		states: make(chan remote.State, 16),
		done:   make(chan struct{}),
	}
	h.emit(remote.State{State: "connecting"})
	c, err := h.connect(ctx)
	if err != nil {
		h.emit(remote.State{State: "failed", Err: err})
		h.closeStates()
		return nil, err
	}
	h.setUp(c, firstRTT(c))
	sctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go h.supervise(sctx, c)
	return h, nil
}

// Name is the host as the operator typed it.
func (h *Host) Name() string { return h.name }

// Label names the host and its address, "gpu1 (10.0.0.5:22)".
func (h *Host) Label() string { return h.cfg.Label() }

// States delivers connection state changes; when the reader falls behind,
// older states are dropped and the latest kept. Closed by Close.
func (h *Host) States() <-chan remote.State { return h.states }

func (h *Host) emit(s remote.State) {
	s.Host = h.name
	if s.At.IsZero() {
		s.At = time.Now()
	}
	h.stMu.Lock()
	defer h.stMu.Unlock()
	if h.stClosed {
		return
	}
	for {
		select {
		case h.states <- s:
			return
		default:
		}
		select {
		case <-h.states:
		default:
		}
	}
}

func (h *Host) closeStates() {
	h.stMu.Lock()
	defer h.stMu.Unlock()
	if !h.stClosed {
		h.stClosed = true
		close(h.states)
	}
}

// setUp makes c the live connection; false when the host was closed
// meanwhile (c is then closed).
func (h *Host) setUp(c *conn, rtt time.Duration) bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.fail(ErrClosed)
		return false
	}
	h.cur = c
	close(h.ready)
	h.mu.Unlock()
	h.emit(remote.State{State: "up", RTT: rtt})
	return true
}

// firstRTT measures the round trip of a new connection. The first request
// after login is slow while sshd sets the session up, so the second counts.
func firstRTT(c *conn) time.Duration {
	rtt, err := ping(c.client, 5*time.Second)
	if err == nil {
		if r2, err := ping(c.client, 5*time.Second); err == nil {
			rtt = r2
		}
	}
	return rtt
}

func (h *Host) setRTT(c *conn, rtt time.Duration) {
	h.mu.Lock()
	isCur := h.cur == c
	h.mu.Unlock()
	if isCur {
		h.emit(remote.State{State: "up", RTT: rtt})
	}
}

// conn returns the live connection, waiting while reconnecting.
func (h *Host) conn(ctx context.Context) (*conn, error) {
	for {
		h.mu.Lock()
		c, ready, failed, closed := h.cur, h.ready, h.failed, h.closed
		h.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case failed != nil:
			return nil, failed
		case c != nil:
			select {
			case <-c.done:
				// Dropped; the supervisor will notice. Wait for the next one.
				time.Sleep(10 * time.Millisecond)
				continue
			default:
				return c, nil
			}
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// supervise waits for the connection to drop and reconnects with capped
// exponential backoff and jitter. Host key and authentication failures stop
// it: the host is then failed.
func (h *Host) supervise(ctx context.Context, c *conn) {
	defer close(h.done)
	attempt := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.done:
		}
		reason := c.reason()
		h.mu.Lock()
		h.cur = nil
		h.ready = make(chan struct{})
		h.mu.Unlock()
		h.emit(remote.State{State: "down", Err: reason})
		if time.Since(c.started) > time.Minute {
			attempt = 0
		}
		for {
			d := h.backoff(attempt)
			attempt++
			h.emit(remote.State{State: "backoff", Err: reason, RetryIn: d})
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			h.emit(remote.State{State: "connecting"})
			nc, err := h.connect(ctx)
			if ctx.Err() != nil {
				if nc != nil {
					nc.closeAll()
				}
				return
			}
			if err == nil {
				c = nc
				if !h.setUp(nc, firstRTT(nc)) {
					return
				}
				h.killOrphans(ctx, nc)
				break
			}
			if isPermanent(err) {
				h.mu.Lock()
				if h.closed {
					h.mu.Unlock()
					return
				}
				h.failed = err
				close(h.ready)
				h.mu.Unlock()
				h.emit(remote.State{State: "failed", Err: err})
				return
			}
			reason = err
		}
	}
}

// backoff is the delay before reconnect attempt n: exponential from
// BackoffMin, capped at BackoffMax, with jitter over its upper half.
func (h *Host) backoff(n int) time.Duration {
	lo, hi := h.opt.BackoffMin, h.opt.BackoffMax
	if lo <= 0 {
		lo = 500 * time.Millisecond
	}
	if hi <= 0 {
		hi = 30 * time.Second
	}
	d := lo
	for i := 0; i < n && d < hi; i++ {
		d *= 2
	}
	if d > hi {
		d = hi
	}
	return d/2 + rand.N(d/2+1)
}

// Close ends the connection and stops reconnecting; it closes States.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	c := h.cur
	h.cur = nil
	select {
	case <-h.ready:
	default:
		close(h.ready)
	}
	h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
	}
	if c != nil {
		c.fail(ErrClosed)
	}
	if h.cancel != nil {
		<-h.done
	}
	h.emit(remote.State{State: "down", Err: ErrClosed})
	h.closeStates()
	return nil
}

// wrap names the host in an error.
func (h *Host) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var ce *ConnectError
	if errors.As(err, &ce) || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("ssh %s: %s: %w", h.cfg.Label(), what, err)
}
