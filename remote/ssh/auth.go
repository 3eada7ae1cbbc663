package ssh

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// keyring holds identity files decrypted during this run, so a passphrase
// is asked once, not on every reconnect.
type keyring struct {
	mu      sync.Mutex
	signers map[string]gossh.Signer
}

// promptFunc asks the operator a question; nil when headless.
type promptFunc func(question string, secret bool) (string, error)

// asker asks the operator for passphrases during one handshake; hold
// lifts the handshake's deadline until the returned function is called, so
// neither the operator's typing nor the key derivation counts against it.
type asker struct {
	prompt promptFunc
	hold   func() (release func())
}

// decrypt returns the signer of an encrypted identity file, asking for its
// passphrase (three tries). Headless, it is an error naming the file.
func (k *keyring) decrypt(path string, pem []byte, a asker) (gossh.Signer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.signers[path]; s != nil {
		return s, nil
	}
	if a.prompt == nil {
		return nil, fmt.Errorf("identity file %s is encrypted and no passphrase can be asked without the terminal UI; add it to ssh-agent (ssh-add %s)", path, path)
	}
	if a.hold != nil {
		defer a.hold()()
	}
	for try := 0; try < 3; try++ {
		pass, err := a.prompt("Passphrase for "+path+":", true)
		if err != nil {
			return nil, fmt.Errorf("identity file %s: passphrase: %w", path, err)
		}
		s, err := gossh.ParsePrivateKeyWithPassphrase(pem, []byte(pass))
		if err == nil {
			if k.signers == nil {
				k.signers = map[string]gossh.Signer{}
			}
			k.signers[path] = s
			return s, nil
		}
		if !errors.Is(err, x509.IncorrectPasswordError) {
			return nil, fmt.Errorf("identity file %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("identity file %s: wrong passphrase (3 tries)", path)
}

// lazySigner is an encrypted identity whose public key is known; the
// passphrase is asked only when the server accepts that key.
type lazySigner struct {
	k    *keyring
	a    asker
	path string
	pem  []byte
	pub  gossh.PublicKey
}

func (s *lazySigner) PublicKey() gossh.PublicKey { return s.pub }

func (s *lazySigner) Sign(r io.Reader, data []byte) (*gossh.Signature, error) {
	sg, err := s.k.decrypt(s.path, s.pem, s.a)
	if err != nil {
		return nil, err
	}
	return sg.Sign(r, data)
}

func (s *lazySigner) SignWithAlgorithm(r io.Reader, data []byte, algo string) (*gossh.Signature, error) {
	sg, err := s.k.decrypt(s.path, s.pem, s.a)
	if err != nil {
		return nil, err
	}
	if as, ok := sg.(gossh.AlgorithmSigner); ok {
		return as.SignWithAlgorithm(r, data, algo)
	}
	if algo == "" || algo == s.pub.Type() {
		return sg.Sign(r, data)
	}
	return nil, fmt.Errorf("identity file %s: cannot sign with %s", s.path, algo)
}

// identity is one identity file, loaded.
type identity struct {
	path   string
	pub    gossh.PublicKey // nil when encrypted without a readable .pub
	signer gossh.Signer
}

func (k *keyring) load(path string, a asker) (*identity, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := gossh.ParsePrivateKey(pem)
	if err == nil {
		return &identity{path: path, pub: s.PublicKey(), signer: s}, nil
	}
	var miss *gossh.PassphraseMissingError
	if !errors.As(err, &miss) {
		return nil, fmt.Errorf("identity file %s: %w", path, err)
	}
	pub := miss.PublicKey
	if pub == nil {
		if b, err := os.ReadFile(path + ".pub"); err == nil {
			pub, _, _, _, _ = gossh.ParseAuthorizedKey(b)
		}
	}
	k.mu.Lock()
	cached := k.signers[path]
	k.mu.Unlock()
	if cached != nil {
		return &identity{path: path, pub: cached.PublicKey(), signer: cached}, nil
	}
	if pub == nil {
		if a.prompt == nil {
			return &identity{path: path}, nil
		}
		s, err := k.decrypt(path, pem, a)
		if err != nil {
			return nil, err
		}
		return &identity{path: path, pub: s.PublicKey(), signer: s}, nil
	}
	return &identity{path: path, pub: pub, signer: &lazySigner{k: k, a: a, path: path, pem: pem, pub: pub}}, nil
}

// authPlan is the keys offered to one host, in order, and what was skipped.
type authPlan struct {
	signers []gossh.Signer
	offered []string
	skipped []string
	closers []io.Closer
}

func (p *authPlan) close() {
	for _, c := range p.closers {
		c.Close()
	}
}

// describe says what was tried, for an "unable to authenticate" error.
func (p *authPlan) describe() string {
	s := "offered: none"
	if len(p.offered) > 0 {
		s = "offered: " + strings.Join(p.offered, ", ")
	}
	if len(p.skipped) > 0 {
		s += "; skipped: " + strings.Join(p.skipped, "; ")
	}
	return s
}

// agentSigners are the keys of the ssh-agent at SSH_AUTH_SOCK (none
// without one); the agent's connection is kept to sign with, and a failure
// is said in skipped.
func (p *authPlan) agentSigners() []gossh.Signer {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil
	}
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		p.skipped = append(p.skipped, "ssh-agent at "+sock+": "+err.Error())
		return nil
	}
	p.closers = append(p.closers, conn)
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	signers, err := agent.NewClient(conn).Signers()
	conn.SetDeadline(time.Time{})
	if err != nil {
		p.skipped = append(p.skipped, "ssh-agent: "+err.Error())
	}
	return signers
}

// planAuth orders the keys like OpenSSH: agent keys that match an identity
// file, other agent keys (unless IdentitiesOnly), then identity files not in
// the agent. The explicit identity comes before the config's; the default
// files are used when neither gives one.
func planAuth(c *hostConfig, o *Options, k *keyring, a asker) (*authPlan, error) {
	p := &authPlan{}
	var paths []string
	if o.Identity != "" {
		id := expandTilde(o.Identity)
		if _, err := os.Stat(id); err != nil {
			return nil, fmt.Errorf("identity file %s: %w", id, err)
		}
		paths = append(paths, id)
	}
	paths = append(paths, c.IdentityFiles...)
	if len(paths) == 0 {
		if home, err := os.UserHomeDir(); err == nil {
			for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
				paths = append(paths, filepath.Join(home, ".ssh", n))
			}
		}
	}
	var ids []*identity
	seen := map[string]bool{}
	for _, path := range paths {
		if seen[path] {
			continue
		}
		seen[path] = true
		if _, err := os.Stat(path); err != nil {
			continue
		}
		id, err := k.load(path, a)
		if err != nil {
			return nil, err
		}
		if id.pub == nil {
			p.skipped = append(p.skipped, path+" is encrypted and has no .pub file (no passphrase can be asked without the terminal UI)")
			continue
		}
		ids = append(ids, id)
	}

	agentSigners := p.agentSigners()
	used := map[int]bool{}
	inAgent := func(pub gossh.PublicKey) int {
		for i, s := range agentSigners {
			if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
				return i
			}
		}
		return -1
	}
	fileDone := map[string]bool{}
	for _, id := range ids {
		if i := inAgent(id.pub); i >= 0 && !used[i] {
			used[i] = true
			fileDone[id.path] = true
			p.signers = append(p.signers, agentSigners[i])
			p.offered = append(p.offered, "agent key "+gossh.FingerprintSHA256(id.pub)+" ("+id.path+")")
		}
	}
	if !c.IdentitiesOnly {
		for i, s := range agentSigners {
			if !used[i] {
				p.signers = append(p.signers, s)
				p.offered = append(p.offered, "agent key "+gossh.FingerprintSHA256(s.PublicKey()))
			}
		}
	}
	for _, id := range ids {
		if !fileDone[id.path] {
			p.signers = append(p.signers, id.signer)
			p.offered = append(p.offered, id.path)
		}
	}
	return p, nil
}
