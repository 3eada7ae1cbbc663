// Package selfbin puts a copy of this program on a host, so that part of a
// run (the load generator) can run there: the host's operating system and
// architecture are checked against this build first, and the copy is kept
// in the host user's cache directory under its content hash, so it is sent
// once per build.
package selfbin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// Install is where the program is on the host and what putting it there
// took.
type Install struct {
	Path   string        // the program on the host
	Root   string        // the cache folder holding it (…/profdeck)
	Hash   string        // its sha256, hex
	Copied bool          // false: it was there already (cached)
	Bytes  int64         // the program's size
	Took   time.Duration // checking and, when Copied, copying
	OS     string        // the host's `uname -s`
	Arch   string        // the host's `uname -m`
}

// goOS and goArch map `uname -s` and `uname -m` to Go's GOOS and GOARCH.
var goOS = map[string]string{"Linux": "linux", "Darwin": "darwin", "FreeBSD": "freebsd"}

var goArch = map[string]string{"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
	"ppc64le": "ppc64le", "s390x": "s390x", "i686": "386", "i386": "386", "riscv64": "riscv64"}

// PlatformError is a host whose operating system or architecture is not
// this build's: the operator asked for something this program cannot do
// there, so it is bad input (exit 2).
type PlatformError struct {
	Host, OS, Arch string
}

func (e *PlatformError) Error() string {
	want := "an unknown platform"
	if o, a := goOS[e.OS], goArch[e.Arch]; o != "" && a != "" {
		want = fmt.Sprintf("GOOS=%s GOARCH=%s go build", o, a)
	}
	return fmt.Sprintf("--loadgen host: host %s is %s %s, this profdeck is built for %s/%s: use --loadgen here, or run a profdeck built for the host (%s)",
		e.Host, e.OS, e.Arch, runtime.GOOS, runtime.GOARCH, want)
}

// Ensure checks that h runs this build's OS and architecture and that the
// program at exe (this program, when empty) is in the host's cache
// directory (${XDG_CACHE_HOME:-~/.cache}/profdeck/SHA256/profdeck),
// copying it there when it is not. A host of another platform is a
// *PlatformError (bad input for the caller).
func Ensure(ctx context.Context, h remote.Host, exe string) (*Install, error) {
	t0 := time.Now()
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding this program to copy to the host: %w", err)
		}
	}
	hash, size, err := hashOf(exe)
	if err != nil {
		return nil, fmt.Errorf("reading this program to copy to the host: %w", err)
	}
	in := &Install{Hash: hash, Bytes: size}
	// One round trip: the platform, the cache directory (checked, see
	// guard.go), whether the copy is there and whole.
	probe := `uname -s; uname -m; r="${XDG_CACHE_HOME:-$HOME/.cache}/profdeck"; d="$r/` + in.Hash + `"; printf '%s\n' "$d"
case "$r" in /*) ;; *) echo nocache; exit 0;; esac
case "$(uname -s) $(uname -m)" in ` + thisPlatform() + `) ;; *) echo other; exit 0;; esac
` + guardDirs(`"$r"`, `"$d"`) + fileState(`"$d/profdeck"`, in.Hash)
	out, err := remote.Output(ctx, h, probe)
	if rerr := Refusal(h.Name(), err, nil); rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, fmt.Errorf("host %s: checking its platform (uname): %w", h.Name(), err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 4 {
		return nil, fmt.Errorf("host %s: unexpected answer to uname: %q", h.Name(), remote.ScrubSecrets(out))
	}
	lines = lines[len(lines)-4:] // rc files may print first
	in.OS, in.Arch = strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
	if goOS[in.OS] != runtime.GOOS || goArch[in.Arch] != runtime.GOARCH {
		return nil, &PlatformError{Host: h.Name(), OS: in.OS, Arch: in.Arch}
	}
	dir := strings.TrimSpace(lines[2])
	if !strings.HasPrefix(dir, "/") || strings.TrimSpace(lines[3]) == "nocache" {
		return nil, fmt.Errorf("host %s: no cache directory (HOME is not set?): %q", h.Name(), dir)
	}
	in.Root = path.Dir(dir)
	in.Path = dir + "/profdeck"
	if strings.TrimSpace(lines[3]) != "cached" {
		data, err := os.ReadFile(exe)
		if err == nil && sha256.Sum256(data) != mustHex(in.Hash) {
			err = errors.New("it changed while being copied")
		}
		if err != nil {
			return nil, fmt.Errorf("reading this program to copy to the host: %w", err)
		}
		if err := h.WriteFile(ctx, in.Path, data, 0o755); err != nil {
			return nil, fmt.Errorf("copying profdeck (%d MiB) to host %s: %w", len(data)>>20, h.Name(), err)
		}
		in.Copied = true
	}
	in.Took = time.Since(t0)
	return in, nil
}

// thisPlatform is a shell case pattern matching the `uname -s` `uname -m`
// pairs of this build: nothing is created on a host of another.
func thisPlatform() string {
	var pats []string
	for o, gos := range goOS {
		for a, garch := range goArch {
			if gos == runtime.GOOS && garch == runtime.GOARCH {
				pats = append(pats, "'"+o+" "+a+"'")
			}
		}
	}
	if len(pats) == 0 {
		return "'-'"
	}
	sort.Strings(pats)
	return strings.Join(pats, "|")
}

// hashes remembers each program's hash by path, size and modification
// time: a campaign checks the copy once per sweep and profile window.
var hashes sync.Map

type fileKey struct {
	path string
	size int64
	mod  time.Time
}

// hashOf is the sha256 (hex) and size of the file at p, read only when
// the file is not the one last hashed.
func hashOf(p string) (string, int64, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", 0, err
	}
	key := fileKey{p, st.Size(), st.ModTime()}
	if h, ok := hashes.Load(key); ok {
		return h.(string), st.Size(), nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	hashes.Store(key, h)
	return h, int64(len(data)), nil
}

func mustHex(s string) (b [sha256.Size]byte) {
	hex.Decode(b[:], []byte(s))
	return b
}

// EnsureFile copies the local file at local into the host's cache next to
// the installed program (…/profdeck/data/SHA256-NAME), unless a copy is
// there already (checked as the program is: ours, private, its sha256
// the local file's), and returns its path on the host. A sweep's dataset goes
// to the host this way.
func EnsureFile(ctx context.Context, h remote.Host, in *Install, local string) (string, error) {
	data, err := os.ReadFile(local)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	dst := in.Root + "/data/" + hash + "-" + path.Base(filepath.ToSlash(local))
	check := guardDirs(remote.Quote(in.Root), remote.Quote(in.Root+"/data")) + fileState(remote.Quote(dst), hash)
	out, err := remote.Output(ctx, h, check)
	if rerr := Refusal(h.Name(), err, nil); rerr != nil {
		return "", rerr
	}
	if err != nil {
		return "", fmt.Errorf("host %s: %w", h.Name(), err)
	}
	if strings.HasSuffix(strings.TrimSpace(out), "cached") {
		return dst, nil
	}
	if err := h.WriteFile(ctx, dst, data, 0o644); err != nil {
		return "", fmt.Errorf("copying %s to host %s: %w", local, h.Name(), err)
	}
	return dst, nil
}
