package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Private places on a host shared with other users: a folder of profdeck's
// is the user's, not a symbolic link and not writable by group or others
// (created 0700 when missing); a file profdeck writes where another user
// could plant a link is created anew, never through a link.

// UID is the placeholder in a path that stands for the host user's uid
// ("/tmp/profdeck-{uid}"), so that each user of a host has a folder of
// their own.
const UID = "{uid}"

// RefusedStatus is the exit status of a check on the host that refused a
// path; RefusedPrefix starts its one line on stderr.
const (
	RefusedStatus = 97
	RefusedPrefix = "profdeck: refusing "
)

// PathError is a path on a host that failed the check: Line names it, why
// and the fix. It is the operator's to fix (bad input).
type PathError struct {
	Host string
	Line string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("host %s: %s", e.Host, strings.TrimPrefix(e.Line, "profdeck: "))
}

// Refused is the *PathError that err (a failed command) and its stderr
// lines carry when the command was a check that refused a path, else nil.
func Refused(host string, err error, stderr ...string) error {
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Status != RefusedStatus {
		return nil
	}
	for _, l := range append(stderr, strings.Split(ee.Stderr, "\n")...) {
		if i := strings.Index(l, RefusedPrefix); i >= 0 {
			return &PathError{Host: host, Line: ScrubSecrets(strings.TrimSpace(l[i:]))}
		}
	}
	return nil
}

// pathWord is p as a shell word, {uid} replaced by the user's uid on the
// host and a leading ~/ by $HOME.
func pathWord(p string) string {
	parts := strings.Split(p, UID)
	for i, s := range parts {
		switch {
		case s == "":
		case i == 0:
			parts[i] = QuotePath(s)
		default:
			parts[i] = Quote(s)
		}
	}
	return strings.Join(parts, `"$(id -u)"`)
}

// privateDirScript makes the folder dir (created 0700, its parents as
// mkdir -p makes them) and checks that it is the user's, not a link and
// not writable by group or others; it prints the folder's path.
func privateDirScript(dir, flag string) string {
	return `pd_d=` + pathWord(dir) + `; pd_me=$(id -u)
pd_bad() { printf '%s%s: %s\n' '` + RefusedPrefix + `' "$pd_d" "$1" >&2; exit 97; }
[ -L "$pd_d" ] && pd_bad "a symbolic link: remove it, or give a folder of yours (` + flag + `)"
( umask 077; mkdir -p "$pd_d" ) 2>/dev/null; [ -d "$pd_d" ] || pd_bad "not a folder, and cannot be made one: remove it, or give a folder of yours (` + flag + `)"
set -- $(stat -c '%u %a' "$pd_d" 2>/dev/null || stat -f '%u %Lp' "$pd_d")
[ "$1" = "$pd_me" ] || pd_bad "owned by uid $1, not by you (uid $pd_me): give a folder of yours (` + flag + `)"
[ $(( 0$2 & 022 )) -eq 0 ] || pd_bad "writable by group or others (mode $2): chmod go-w $pd_d, or give a folder of yours (` + flag + `)"
printf '%s\n' "$pd_d"`
}

// SimUID is the uid {uid} stands for on a simulated host (its user is
// root).
const SimUID = "0"

// ResolveUID is p with {uid} replaced by the uid of h's user (asked of the
// host with id -u once; SimUID on a simulated host); p without {uid} is
// returned as is.
func ResolveUID(ctx context.Context, h Host, p string) (string, error) {
	if !strings.Contains(p, UID) {
		return p, nil
	}
	uid := SimUID
	if !IsSimulated(h) {
		out, err := Output(ctx, h, "id -u")
		uid = strings.TrimSpace(out)
		if err != nil || uid == "" || strings.Trim(uid, "0123456789") != "" {
			return "", fmt.Errorf("resolving %s on %s: id -u answered %q: %v", UID, h.Name(), oneLineOf(uid), err)
		}
	}
	return strings.ReplaceAll(p, UID, uid), nil
}

func oneLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// PrivateDir makes dir on h a private folder of the user's and returns its
// path ({uid} resolved): created 0700 when missing; one that is not the
// user's, is a link, or is writable by group or others is a *PathError
// naming it and the fix (flag names the setting that gives another).
func PrivateDir(ctx context.Context, h Host, dir, flag string) (string, error) {
	if IsSimulated(h) { // no other users; its user is root
		dir = strings.ReplaceAll(dir, UID, SimUID)
		_, err := Output(ctx, h, "mkdir -p "+QuotePath(dir))
		return dir, err
	}
	out, err := Output(ctx, h, privateDirScript(dir, flag))
	if perr := Refused(h.Name(), err); perr != nil {
		return "", perr
	}
	if err != nil {
		return "", fmt.Errorf("folder %s on %s: %w", dir, h.Name(), err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// CreateCmd is a command that writes its stdin to the file p, created
// anew with mode (octal, e.g. "600") and never through a link: what is at
// p is removed first (a link itself, never its target), then the file is
// created only where nothing is (noclobber), so a link planted in between
// makes it fail.
func CreateCmd(p, mode string) string {
	q := QuotePath(p)
	return `rm -f ` + q + ` && ( umask 077; set -C; cat > ` + q + ` ) && chmod ` + mode + ` ` + q
}

// Create writes data to the file p on h as CreateCmd does; a simulated
// host (no other users) gets an ordinary WriteFile.
func Create(ctx context.Context, h Host, p string, data []byte, mode string) error {
	if IsSimulated(h) {
		var m uint32
		fmt.Sscanf(mode, "%o", &m)
		return h.WriteFile(ctx, p, data, fileMode(m))
	}
	var errb strings.Builder
	err := h.Run(ctx, CreateCmd(p, mode), bytes.NewReader(data), func(l Line) {
		if l.Stream == Stderr {
			errb.WriteString(l.Text + "\n")
		}
	})
	if err != nil {
		return fmt.Errorf("creating %s (never through a link): %s: %w", p, strings.TrimSpace(errb.String()), err)
	}
	return nil
}

func fileMode(m uint32) os.FileMode { return os.FileMode(m) }
