package selfbin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/remote"
)

// What is trusted in the host's cache: the cache's own folder
// (…/profdeck), each folder under it and each file in them must be the
// host user's, not a symbolic link, and not writable by group or others;
// every folder above must be the user's or root's and writable by no one
// else (unless sticky, as /tmp is). Then no other user can put or swap a
// file there between the check and its use. A file's sha256 is checked
// each time it is used, not only when it is copied.

// refusedStatus is the exit status of a check that refused a path.
const refusedStatus = 97

// refusedPrefix starts the one line a refusal prints on stderr.
const refusedPrefix = "profdeck: refusing "

// guardFuncs defines the shell functions of the checks (POSIX sh, GNU or
// BSD stat): pd_bad prints the refusal and exits, pd_up checks the
// folders above a path, pd_own checks one path of ours, pd_sum prints a
// file's sha256.
const guardFuncs = `pd_me=$(id -u)
pd_bad() { printf '%s%s: %s\n' '` + refusedPrefix + `' "$1" "$2" >&2; exit 97; }
pd_st() { stat $1 -c '%u %a' "$2" 2>/dev/null || stat $1 -f '%u %Lp' "$2" 2>/dev/null; }
pd_up() { p=$1; while p=${p%/*}; [ -n "$p" ]; do set -- $(pd_st -L "$p"); [ $# -eq 2 ] || pd_bad "$p" "cannot read its owner and mode"; if [ "$1" != 0 ] && [ "$1" != "$pd_me" ]; then pd_bad "$p" "a folder above the cache owned by uid $1: set XDG_CACHE_HOME to a folder of yours"; fi; if [ $(( 0$2 & 022 )) -ne 0 ] && [ $(( 0$2 & 01000 )) -eq 0 ]; then pd_bad "$p" "a folder above the cache writable by others (mode $2): chmod go-w $p, or set XDG_CACHE_HOME to a folder of yours"; fi; done; }
pd_own() { [ -L "$1" ] && pd_bad "$1" "a symbolic link in profdeck's cache: remove it (rm $1)"; set -- "$1" $(pd_st '' "$1"); [ $# -eq 3 ] || pd_bad "$1" "cannot read its owner and mode"; [ "$2" = "$pd_me" ] || pd_bad "$1" "owned by uid $2, not by you (uid $pd_me): remove it, or set XDG_CACHE_HOME to a folder of yours"; [ $(( 0$3 & 022 )) -eq 0 ] || pd_bad "$1" "writable by group or others (mode $3): chmod go-w $1"; }
pd_sum() { { sha256sum || shasum -a 256; } < "$1" 2>/dev/null | cut -c1-64; }
`

// guardDirs is the check of the cache folder root and the folders of
// dirs under it, creating those missing (private: umask 077). Each is a
// shell word ("$r" or a quoted path).
func guardDirs(root string, dirs ...string) string {
	var b strings.Builder
	b.WriteString(guardFuncs)
	b.WriteString("umask 077; pd_up " + root + "\n")
	for _, q := range append([]string{root}, dirs...) {
		b.WriteString("[ -L " + q + " ] || [ -d " + q + " ] || mkdir " + q + " || pd_bad " + q + " 'cannot create it'\npd_own " + q + "\n")
	}
	return b.String()
}

// guardFile checks file (a shell word: ours, private) and its sha256,
// refusing it when the sum is not hash.
func guardFile(q, hash string) string {
	return "pd_own " + q + "\n[ \"$(pd_sum " + q + ")\" = " + hash + " ] || pd_bad " + q +
		" 'its sha256 is not the one copied (" + hash[:12] + "…): remove it, the next run copies it again'\n"
}

// Command is the command line that runs the installed program with args
// after checking, on the host, that its cache folders and the file are
// the user's and private and that the file's sha256 is the one installed.
// Nothing is read from stdin before the check passes, so what the caller
// sends there (settings, an API key) reaches only the checked program. A
// refusal exits with a status of its own and one line naming the path and
// the fix (see Refusal).
func Command(in *Install, args string) string {
	dir := in.Path[:strings.LastIndexByte(in.Path, '/')]
	return guardDirs(remote.Quote(in.Root), remote.Quote(dir)) + guardFile(remote.Quote(in.Path), in.Hash) + "exec " + remote.Quote(in.Path) + " " + args
}

// UnsafeError is a cache path on the host that failed the check: its line
// names the path and the fix. It is the operator's to fix (bad input).
type UnsafeError struct {
	Host string
	Line string // "profdeck: refusing PATH: why: fix"
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("host %s: %s", e.Host, strings.TrimPrefix(e.Line, "profdeck: "))
}

// Refusal is the *UnsafeError that err (a command's failure) and its
// stderr lines carry when the command was a check that refused, else nil.
func Refusal(host string, err error, stderr []string) error {
	var ee *remote.ExitError
	if !errors.As(err, &ee) || ee.Status != refusedStatus {
		return nil
	}
	for _, l := range append(stderr, strings.Split(ee.Stderr, "\n")...) {
		if i := strings.Index(l, refusedPrefix); i >= 0 {
			return &UnsafeError{Host: host, Line: remote.ScrubSecrets(strings.TrimSpace(l[i:]))}
		}
	}
	return nil
}

// fileState prints whether the file q (a shell word) is there with the
// sha256 hash (cached), there with another (stale: copied again), or
// missing; a file there that is not ours and private is refused.
func fileState(q, hash string) string {
	return "if [ -e " + q + " ] || [ -L " + q + " ]; then pd_own " + q + "; if [ \"$(pd_sum " + q + ")\" = " + hash +
		" ]; then echo cached; else echo stale; fi; else echo missing; fi\n"
}
