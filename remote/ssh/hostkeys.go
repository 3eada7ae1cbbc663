package ssh

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError is a host key that was refused: unknown (and not accepted) or
// changed. It is never retried.
type HostKeyError struct {
	Host    string // label, "gpu1 (10.0.0.5:22)"
	Changed bool
	Known   string // SHA256 fingerprint and file:line of the recorded key (changed only)
	Offered string // SHA256 fingerprint of the key the server offered
	KeyType string
	File    string // where an accepted key would be written
}

// Error explains the host key problem and what to do about it.
func (e *HostKeyError) Error() string {
	if e.Changed {
		return fmt.Sprintf("host key changed: known %s, offered %s %s — possible man-in-the-middle; if the host was really reinstalled, remove the old line", e.Known, e.KeyType, e.Offered)
	}
	return fmt.Sprintf("unknown host key %s %s: not in %s; check the fingerprint and rerun with --accept-new-host-key to add it", e.KeyType, e.Offered, e.File)
}

// hostKeys verifies host keys against known_hosts files, asking about or
// accepting unknown ones.
type hostKeys struct {
	read      []string // files read (existing ones are used)
	write     string   // file unknown keys are appended to when accepted
	acceptNew bool
	hash      bool
	prompt    promptFunc
	mu        *sync.Mutex // serialises appends
}

func newHostKeys(c *hostConfig, o *Options, mu *sync.Mutex, prompt promptFunc) *hostKeys {
	hk := &hostKeys{acceptNew: o.AcceptNewHostKey || c.AcceptNew, hash: c.HashKnownHosts, prompt: prompt, mu: mu}
	if o.KnownHosts != "" {
		hk.read = []string{expandTilde(o.KnownHosts)}
		hk.write = hk.read[0]
	} else {
		hk.read = append(append(hk.read, c.KnownHosts...), c.GlobalKnown...)
		if len(c.KnownHosts) > 0 {
			hk.write = c.KnownHosts[0]
		}
	}
	return hk
}

func (hk *hostKeys) db() (gossh.HostKeyCallback, error) {
	var files []string
	for _, f := range hk.read {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return func(string, net.Addr, gossh.PublicKey) error { return &knownhosts.KeyError{} }, nil
	}
	cb, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("known hosts: %w", err)
	}
	return cb, nil
}

// probeKey is a key no host has, to list what known_hosts holds for a host.
var probeKey = func() gossh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil
	}
	k, _ := gossh.NewPublicKey(pub)
	return k
}()

// algorithms returns the host key algorithms to ask for so the server offers
// a key type that known_hosts has (avoiding a false "changed" when the
// server has several keys); nil means the defaults.
func (hk *hostKeys) algorithms(addr string) []string {
	cb, err := hk.db()
	if err != nil || probeKey == nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if !errors.As(cb(addr, fakeAddr(addr), probeKey), &ke) || len(ke.Want) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var algos []string
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			algos = append(algos, a)
		}
	}
	for _, w := range ke.Want {
		switch t := w.Key.Type(); t {
		case gossh.KeyAlgoRSA:
			add(gossh.KeyAlgoRSASHA512)
			add(gossh.KeyAlgoRSASHA256)
			add(gossh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	return algos
}

// callback returns the HostKeyCallback for one connection attempt.
func (hk *hostKeys) callback(label string) (gossh.HostKeyCallback, error) {
	cb, err := hk.db()
	if err != nil {
		return nil, err
	}
	return func(hostname string, remote net.Addr, key gossh.PublicKey) error {
		err := cb(hostname, remote, key)
		if err == nil {
			return nil
		}
		var rev *knownhosts.RevokedError
		if errors.As(err, &rev) {
			return fmt.Errorf("host key %s is marked @revoked in %s:%d", gossh.FingerprintSHA256(key), rev.Revoked.Filename, rev.Revoked.Line)
		}
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return err
		}
		e := &HostKeyError{Host: label, Offered: gossh.FingerprintSHA256(key), KeyType: key.Type(), File: hk.write}
		if len(ke.Want) > 0 {
			e.Changed = true
			var known []string
			for _, w := range ke.Want {
				known = append(known, fmt.Sprintf("%s %s (%s:%d)", w.Key.Type(), gossh.FingerprintSHA256(w.Key), w.Filename, w.Line))
			}
			sort.Strings(known)
			e.Known = strings.Join(known, ", ")
			return e
		}
		if hk.write == "" {
			return e
		}
		accept := hk.acceptNew
		if !accept && hk.prompt != nil {
			q := fmt.Sprintf("The authenticity of host %s can't be established.\n%s key fingerprint is %s.\nAdd it to %s and connect? (yes/no)", label, key.Type(), e.Offered, hk.write)
			ans, perr := hk.prompt(q, false)
			if perr != nil {
				return fmt.Errorf("host key question: %w", perr)
			}
			ans = strings.ToLower(strings.TrimSpace(ans))
			if ans != "yes" && ans != "y" {
				return fmt.Errorf("unknown host key %s %s: not accepted by the operator", key.Type(), e.Offered)
			}
			accept = true
		}
		if !accept {
			return e
		}
		if err := hk.appendKey(hostname, key); err != nil {
			return fmt.Errorf("adding host key %s to %s: %w", e.Offered, hk.write, err)
		}
		return nil
	}, nil
}

// appendKey records key for hostname (host:port) in the writable file.
func (hk *hostKeys) appendKey(hostname string, key gossh.PublicKey) error {
	hk.mu.Lock()
	defer hk.mu.Unlock()
	name := knownhosts.Normalize(hostname)
	if hk.hash {
		name = knownhosts.HashHostname(name)
	}
	if err := os.MkdirAll(filepath.Dir(hk.write), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(hk.write, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	// Start on a new line even if the file lacks a final newline.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		if b, err := os.ReadFile(hk.write); err == nil && len(b) > 0 && b[len(b)-1] != '\n' {
			f.WriteString("\n")
		}
	}
	_, err = f.WriteString(knownhosts.Line([]string{name}, key) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }
