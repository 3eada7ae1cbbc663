package ssh

import (
	"fmt"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// OpenSSH's sshd turns TCP_NODELAY on for a connection's socket when the
// first command or shell starts on it (ssh_packet_set_interactive, called
// once per connection), and never before. A connection that only forwards
// TCP (direct-tcpip channels, as DialContext opens) stays Nagled: sshd holds
// a small write while an earlier one is unacknowledged, so the events of a
// token stream reach this side in bunches, late, and TTFT and ITL come out
// wrong. Every new connection, jump hosts included, therefore starts one
// short command with a terminal (the interactive case, which every sshd
// version answers with TCP_NODELAY), or a plain one when the server refuses
// terminals, before anything else runs on it.

// Nodelay says how a connection's server side was made to send at once.
const (
	NodelayPTY  = "pty"  // a short command with a terminal ran first
	NodelayExec = "exec" // terminals refused: a plain command ran first
	NodelayNone = "none" // the server refused both (no command allowed)
)

// nudgeWait bounds how long a new connection waits for the server to
// accept the command that turns TCP_NODELAY on.
const nudgeWait = 10 * time.Second

// nudge runs one short command on cl so that its sshd sends without
// delay, and returns how (Nodelay*) and, for NodelayNone, why. sshd sets
// the socket option when it starts the command, so only the exec request's
// reply is waited for; the session is closed when the command ends.
func nudge(cl *gossh.Client) (string, error) {
	if err := startShort(cl, true); err == nil {
		return NodelayPTY, nil
	}
	if err := startShort(cl, false); err != nil {
		return NodelayNone, err
	}
	return NodelayExec, nil
}

// startShort starts "exit 0" in a new session, with a terminal when pty,
// and closes the session when it ends (or after nudgeWait).
func startShort(cl *gossh.Client, pty bool) error {
	s, err := cl.NewSession()
	if err != nil {
		return err
	}
	if pty {
		if err := s.RequestPty("dumb", 24, 80, gossh.TerminalModes{gossh.ECHO: 0}); err != nil {
			s.Close()
			return err
		}
	}
	if err := s.Start("exit 0"); err != nil {
		s.Close()
		return err
	}
	go func() {
		t := time.AfterFunc(nudgeWait, func() { s.Close() })
		s.Wait()
		t.Stop()
		s.Close()
	}()
	return nil
}

// nudgeAll nudges every client of a new connection at once (the jump
// hosts forward the target's bytes, so their sshd must not hold them
// either; labels name them) and returns the worst outcome: NodelayNone
// with the reason when any server refused both commands or did not answer
// within nudgeWait.
func nudgeAll(clients []*gossh.Client, labels []string) (string, error) {
	type out struct {
		how string
		err error
	}
	res := make(chan out, len(clients))
	for i, cl := range clients {
		go func() {
			how, err := nudge(cl)
			if err != nil {
				err = fmt.Errorf("%s runs no command on this connection (%w)", labels[i], err)
			}
			res <- out{how, err}
		}()
	}
	t := time.NewTimer(nudgeWait)
	defer t.Stop()
	worst := NodelayPTY
	for range clients {
		select {
		case r := <-res:
			if r.how == NodelayNone {
				return NodelayNone, r.err
			}
			if r.how == NodelayExec {
				worst = NodelayExec
			}
		case <-t.C:
			return NodelayNone, fmt.Errorf("no answer to a command within %s", nudgeWait)
		}
	}
	return worst, nil
}

// Nodelay says how the live connection's servers were made to send without
// delay (NodelayPTY, NodelayExec) or, for NodelayNone, why they could not
// be: forwarded streams then arrive in bunches. It is "" while no
// connection is up.
func (h *Host) Nodelay() (string, error) {
	h.mu.Lock()
	c := h.cur
	h.mu.Unlock()
	if c == nil {
		return "", nil
	}
	return c.nodelay, c.nodelayErr
}

// Forwarding names the connection DialContext goes through and says how
// its servers were made to send at once (remote.Forwarder).
func (h *Host) Forwarding() (via, nodelay string, err error) {
	nodelay, err = h.Nodelay()
	return h.Label(), nodelay, err
}
