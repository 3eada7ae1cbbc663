package ssh

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sshconfig "github.com/kevinburke/ssh_config"
)

// hostConfig is one SSH destination resolved the way OpenSSH resolves it:
// the target as typed, then ~/.ssh/config, then defaults.
type hostConfig struct {
	Alias          string // the host part as typed (or the ProxyJump hop name)
	HostName       string
	Port           int
	User           string
	IdentityFiles  []string // from the config, expanded; nil when none were given
	IdentitiesOnly bool
	Jumps          []*hostConfig // hops to go through, outermost first
	KnownHosts     []string      // UserKnownHostsFile, expanded
	GlobalKnown    []string      // GlobalKnownHostsFile, expanded
	HashKnownHosts bool
	AcceptNew      bool // StrictHostKeyChecking accept-new
	ConnectTimeout time.Duration
	AliveInterval  time.Duration // ServerAliveInterval; 0 when unset
	AliveCountMax  int
}

// Addr is host:port as dialled and as looked up in known_hosts.
func (c *hostConfig) Addr() string {
	return net.JoinHostPort(c.HostName, strconv.Itoa(c.Port))
}

// Label names the host in messages: "gpu1 (10.0.0.5:22)".
func (c *hostConfig) Label() string {
	addr := c.Addr()
	if c.Alias == "" || c.Alias == addr || c.Alias == c.HostName {
		return addr
	}
	return c.Alias + " (" + addr + ")"
}

// sshConfig is the parsed configuration files, user file first.
type sshConfig struct {
	files []*sshconfig.Config
	names []string
}

// loadSSHConfig reads path, or ~/.ssh/config and /etc/ssh/ssh_config when
// path is empty (like ssh -F). Missing default files are fine; a missing
// file that was asked for is an error.
func loadSSHConfig(path string) (*sshConfig, error) {
	var paths []string
	explicit := path != ""
	if explicit {
		paths = []string{expandTilde(path)}
	} else {
		if home, err := os.UserHomeDir(); err == nil {
			paths = append(paths, filepath.Join(home, ".ssh", "config"))
		}
		paths = append(paths, "/etc/ssh/ssh_config")
	}
	sc := &sshConfig{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			if !explicit && os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("ssh config %s: %w", p, err)
		}
		cfg, err := decodeConfig(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("ssh config %s: %w", p, err)
		}
		sc.files = append(sc.files, cfg)
		sc.names = append(sc.names, p)
	}
	return sc, nil
}

// maxConfigFile bounds what is read of an SSH configuration file.
const maxConfigFile = 4 << 20

// decodeConfig parses a configuration file, its Match blocks rewritten as
// the Host blocks that select the same hosts (rewriteMatch).
func decodeConfig(f io.Reader) (cfg *sshconfig.Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot parse: %v", r)
		}
	}()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigFile {
		return nil, fmt.Errorf("over %d MiB: not an SSH configuration", maxConfigFile>>20)
	}
	return sshconfig.Decode(bytes.NewReader(rewriteMatch(b)))
}

// get returns the first value of key for alias over all files.
func (sc *sshConfig) get(alias, key string) (v string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("ssh config: %v (Match blocks are not supported)", r)
		}
	}()
	for i, f := range sc.files {
		v, err := f.Get(alias, key)
		if err != nil {
			return "", fmt.Errorf("ssh config %s: %w", sc.names[i], err)
		}
		if v != "" {
			return v, nil
		}
	}
	return "", nil
}

// getAll returns every value of key for alias over all files.
func (sc *sshConfig) getAll(alias, key string) (all []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("ssh config: %v (Match blocks are not supported)", r)
		}
	}()
	for i, f := range sc.files {
		vs, err := f.GetAll(alias, key)
		if err != nil {
			return nil, fmt.Errorf("ssh config %s: %w", sc.names[i], err)
		}
		all = append(all, vs...)
	}
	return all, nil
}

// splitTarget parses "[user@]host[:port]" (and "[v6addr]:port").
func splitTarget(spec string) (userName, host string, port int, err error) {
	s := strings.TrimPrefix(spec, "ssh://")
	if i := strings.LastIndex(s, "@"); i >= 0 {
		userName, s = s[:i], s[i+1:]
		if userName == "" {
			return "", "", 0, fmt.Errorf("ssh target %q: empty user name", spec)
		}
	}
	host = s
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, p, e := net.SplitHostPort(s)
		if e == nil {
			host = h
			if port, err = strconv.Atoi(p); err != nil || port <= 0 || port > 65535 {
				return "", "", 0, fmt.Errorf("ssh target %q: bad port %q", spec, p)
			}
		} else if strings.HasPrefix(s, "[") {
			host = strings.Trim(s, "[]")
		}
	}
	if strings.HasPrefix(host, "-") {
		return "", "", 0, fmt.Errorf("ssh target %q: a host name cannot start with \"-\" (options are not passed to ssh)", spec)
	}
	if host == "" || strings.ContainsAny(host, " \t/") {
		return "", "", 0, fmt.Errorf("ssh target %q: want [user@]host[:port] or an ~/.ssh/config alias", spec)
	}
	return userName, host, port, nil
}

// resolve turns a target into a hostConfig, following ProxyJump chains.
func (sc *sshConfig) resolve(spec string) (*hostConfig, error) {
	return sc.resolveDepth(spec, 0, true)
}

func (sc *sshConfig) resolveDepth(spec string, depth int, withJumps bool) (*hostConfig, error) {
	if depth > 8 {
		return nil, fmt.Errorf("ssh target %q: ProxyJump chain too long (a loop?)", spec)
	}
	userName, alias, port, err := splitTarget(spec)
	if err != nil {
		return nil, err
	}
	get := func(key string) (string, error) { return sc.get(alias, key) }
	c := &hostConfig{Alias: alias, Port: port, User: userName}

	if v, err := get("ProxyCommand"); err != nil {
		return nil, err
	} else if v != "" && !strings.EqualFold(v, "none") {
		return nil, fmt.Errorf("ssh target %q: ProxyCommand is not supported; use ProxyJump", spec)
	}
	if err := sc.resolveAddress(c, alias, get); err != nil {
		return nil, err
	}
	if err := sc.resolveKeys(c, alias, get); err != nil {
		return nil, err
	}
	if err := resolveTimers(c, alias, get); err != nil {
		return nil, err
	}
	if !withJumps {
		return c, nil
	}
	if err := sc.resolveJumps(c, alias, depth, get); err != nil {
		return nil, err
	}
	return c, nil
}

// resolveAddress sets the host name, port and user (those of the target
// first, then the config's, then the defaults).
func (sc *sshConfig) resolveAddress(c *hostConfig, alias string, get func(string) (string, error)) error {
	var err error
	if c.HostName, err = get("HostName"); err != nil {
		return err
	}
	if c.HostName == "" {
		c.HostName = alias
	}
	c.HostName = strings.ReplaceAll(c.HostName, "%h", alias)
	if c.Port == 0 {
		v, err := get("Port")
		if err != nil {
			return err
		}
		c.Port = 22
		if v != "" {
			if c.Port, err = strconv.Atoi(v); err != nil || c.Port <= 0 || c.Port > 65535 {
				return fmt.Errorf("ssh config for %q: bad Port %q", alias, v)
			}
		}
	}
	if c.User == "" {
		if c.User, err = get("User"); err != nil {
			return err
		}
		if c.User == "" {
			c.User = localUser()
		}
	}
	return nil
}

// resolveKeys sets the identity files and the known-hosts files and how
// they are used.
func (sc *sshConfig) resolveKeys(c *hostConfig, alias string, get func(string) (string, error)) error {
	tok := tokens(c, alias)
	ids, err := sc.getAll(alias, "IdentityFile")
	if err != nil {
		return err
	}
	for _, id := range ids {
		if strings.EqualFold(id, "none") {
			continue
		}
		c.IdentityFiles = append(c.IdentityFiles, expandPath(id, tok))
	}
	if v, err := get("IdentitiesOnly"); err != nil {
		return err
	} else {
		c.IdentitiesOnly = strings.EqualFold(v, "yes")
	}
	for _, pair := range []struct {
		key string
		dst *[]string
	}{{"UserKnownHostsFile", &c.KnownHosts}, {"GlobalKnownHostsFile", &c.GlobalKnown}} {
		v, err := get(pair.key)
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(v) {
			if !strings.EqualFold(f, "none") {
				*pair.dst = append(*pair.dst, expandPath(f, tok))
			}
		}
	}
	if len(c.KnownHosts) == 0 {
		if home, err := os.UserHomeDir(); err == nil {
			c.KnownHosts = []string{filepath.Join(home, ".ssh", "known_hosts"), filepath.Join(home, ".ssh", "known_hosts2")}
		}
	}
	if len(c.GlobalKnown) == 0 {
		c.GlobalKnown = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	if v, err := get("HashKnownHosts"); err != nil {
		return err
	} else {
		c.HashKnownHosts = strings.EqualFold(v, "yes")
	}
	if v, err := get("StrictHostKeyChecking"); err != nil {
		return err
	} else {
		c.AcceptNew = strings.EqualFold(v, "accept-new")
	}
	return nil
}

// resolveTimers sets the connect timeout and the keep-alive's interval and
// count.
func resolveTimers(c *hostConfig, alias string, get func(string) (string, error)) error {
	if v, err := get("ConnectTimeout"); err != nil {
		return err
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("ssh config for %q: bad ConnectTimeout %q", alias, v)
		}
		c.ConnectTimeout = time.Duration(n) * time.Second
	}
	if v, err := get("ServerAliveInterval"); err != nil {
		return err
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("ssh config for %q: bad ServerAliveInterval %q", alias, v)
		}
		c.AliveInterval = time.Duration(n) * time.Second
	}
	c.AliveCountMax = 3
	if v, err := get("ServerAliveCountMax"); err != nil {
		return err
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("ssh config for %q: bad ServerAliveCountMax %q", alias, v)
		}
		c.AliveCountMax = n
	}
	return nil
}

// resolveJumps resolves ProxyJump's hops into c.Jumps, the first hop's own
// jumps first.
func (sc *sshConfig) resolveJumps(c *hostConfig, alias string, depth int, get func(string) (string, error)) error {
	pj, err := get("ProxyJump")
	if err != nil {
		return err
	}
	if pj == "" || strings.EqualFold(pj, "none") {
		return nil
	}
	hops := strings.Split(pj, ",")
	for i, hop := range hops {
		hop = strings.TrimSpace(hop)
		if hop == "" {
			return fmt.Errorf("ssh config for %q: empty hop in ProxyJump %q", alias, pj)
		}
		// The first hop may have its own ProxyJump; later hops are reached
		// through the ones before them, as ssh -J does.
		hc, err := sc.resolveDepth(hop, depth+1, i == 0)
		if err != nil {
			return fmt.Errorf("ProxyJump %q of %q: %w", hop, alias, err)
		}
		if i == 0 {
			c.Jumps = append(c.Jumps, hc.Jumps...)
			hc.Jumps = nil
		}
		c.Jumps = append(c.Jumps, hc)
	}
	return nil
}

func localUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// tokens are the %-tokens OpenSSH expands in file names.
func tokens(c *hostConfig, alias string) map[byte]string {
	home, _ := os.UserHomeDir()
	return map[byte]string{
		'h': c.HostName, 'p': strconv.Itoa(c.Port), 'r': c.User, 'n': alias,
		'u': localUser(), 'd': home, '%': "%",
	}
}

// expandPath expands ~ and %-tokens in a file name from the config.
func expandPath(p string, tok map[byte]string) string {
	p = strings.Trim(p, `"`)
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+1 < len(p) {
			if v, ok := tok[p[i+1]]; ok {
				b.WriteString(v)
				i++
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return expandTilde(b.String())
}

func expandTilde(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}
