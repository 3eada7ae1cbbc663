package ssh

import (
	"bufio"
	"bytes"
	"path"
	"strings"
)

// The configuration parser takes Host blocks only and refuses a whole file
// with a Match block in it, which made every host fail. rewriteMatch turns
// each Match line into the Host line that selects the same hosts, as far
// as the criteria can be judged before connecting, so the block's settings
// apply where OpenSSH would apply them:
//
//   - all, and final (profdeck reads the file once, as OpenSSH's final pass);
//   - host and originalhost: the pattern list, matched against the name as
//     typed (OpenSSH matches host against the HostName it resolved, which
//     is the same name unless a HostName line renames it);
//   - localuser: this machine's user, judged now.
//
// A block whose criteria cannot be judged here (exec, which would run a
// command; user, canonical, localnetwork, tagged, a negated criterion, two
// host lists) selects no host: it is skipped, never an error.
func rewriteMatch(src []byte) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 64<<10), len(src)+1)
	for sc.Scan() {
		line := sc.Text()
		if args, ok := matchArgs(line); ok {
			line = "Host " + matchHosts(args)
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// matchNone is a Host pattern that selects no host.
const matchNone = "!*"

// matchArgs returns a Match line's criteria and arguments.
func matchArgs(line string) ([]string, bool) {
	s := strings.TrimSpace(line)
	if len(s) < 5 || !strings.EqualFold(s[:5], "match") {
		return nil, false
	}
	rest := s[5:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '=' {
		return nil, false // a key such as "MatchFoo"
	}
	rest = strings.TrimLeft(strings.TrimSpace(rest), "=")
	return splitArgs(rest), true
}

// splitArgs splits on blanks, keeping "quoted words" whole, up to a #.
func splitArgs(s string) []string {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" || s[0] == '#' {
			return out
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return append(out, s[1:])
			}
			out = append(out, s[1:end+1])
			s = s[end+2:]
			continue
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			return append(out, s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
}

// matchHosts is the Host pattern list equivalent to a Match line's
// criteria (matchNone when they cannot be judged or cannot hold).
func matchHosts(args []string) string {
	if len(args) == 0 {
		return matchNone
	}
	hosts := ""
	for i := 0; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "all", "final":
			continue
		case "host", "originalhost":
			if hosts != "" || i+1 == len(args) {
				return matchNone // two host lists must both hold: not one Host line
			}
			i++
			hosts = strings.Join(strings.Split(args[i], ","), " ")
		case "localuser":
			if i+1 == len(args) || !matchList(args[i+1], localUser()) {
				return matchNone
			}
			i++
		default:
			return matchNone // exec, user, canonical, a negation, …
		}
	}
	if hosts == "" {
		return "*"
	}
	return hosts
}

// matchList reports whether s matches a comma-separated pattern list
// (negated entries with !), as OpenSSH's match_pattern_list.
func matchList(list, s string) bool {
	matched := false
	for _, p := range strings.Split(list, ",") {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if ok, _ := path.Match(p, s); ok {
			if neg {
				return false
			}
			matched = true
		}
	}
	return matched
}
