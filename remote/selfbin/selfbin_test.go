package selfbin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/selfbin"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// secret stands for the settings the agent reads on stdin.
const secret = `{"api_key":"sk-test-0123456789abcdef"}`

// program writes a stand-in for profdeck: a script that copies its stdin
// to got (what reached it).
func program(t *testing.T, dir, got string) string {
	t.Helper()
	p := filepath.Join(dir, "profdeck-"+filepath.Base(got))
	if err := os.WriteFile(p, []byte("#!/bin/sh\ncat > "+got+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// cacheHost dials a real sshd whose sessions keep their cache in cache.
func cacheHost(t *testing.T, cache string) remote.Host {
	t.Helper()
	_, h := sshhost.Dial(context.Background(), t, sshtest.Options{Env: []string{"XDG_CACHE_HOME=" + cache}})
	return h
}

// run runs the installed program through its checked command, the
// secret on its stdin.
func run(t *testing.T, h remote.Host, in *selfbin.Install) error {
	t.Helper()
	var stderr []string
	err := h.Run(context.Background(), selfbin.Command(in, "agent"), strings.NewReader(secret+"\n"), func(l remote.Line) {
		if l.Stream == remote.Stderr {
			stderr = append(stderr, l.Text)
		}
	})
	if rerr := selfbin.Refusal(h.Name(), err, stderr); rerr != nil {
		return rerr
	}
	return err
}

// plant puts a script in place of the cached program, keeping its mode:
// it would copy the settings on its stdin to stolen.
func plant(t *testing.T, at, stolen string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(at)
	if err := os.WriteFile(at, []byte("#!/bin/sh\ncat > "+stolen+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func wantRefused(t *testing.T, err error, path, fix string) {
	t.Helper()
	var ue *selfbin.UnsafeError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want the path refused", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, fix) || strings.Contains(msg, "\n") {
		t.Fatalf("refusal %q: want one line naming %s and the fix %q", msg, path, fix)
	}
}

// The cached program is checked each time it runs, not only when copied:
// a script put in its place after the copy never runs and never reads
// the settings sent to the program.
func TestPlantedProgramNeverRuns(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	got, stolen := filepath.Join(dir, "got"), filepath.Join(dir, "stolen")
	h := cacheHost(t, cache)
	in, err := selfbin.Ensure(context.Background(), h, program(t, dir, got))
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t, h, in); err != nil {
		t.Fatalf("the program as copied: %v", err)
	}
	if b, _ := os.ReadFile(got); strings.TrimSpace(string(b)) != secret {
		t.Fatalf("the program read %q, want the settings", b)
	}
	plant(t, in.Path, stolen)
	err = run(t, h, in)
	wantRefused(t, err, in.Path, "remove it")
	if _, serr := os.Stat(stolen); serr == nil {
		t.Fatal("the planted script ran and read the settings")
	}
	// The next Ensure copies the program again; it runs.
	if in, err = selfbin.Ensure(context.Background(), h, program(t, dir, got)); err != nil || !in.Copied {
		t.Fatalf("Ensure after the plant: copied %v, %v; want copied again", in != nil && in.Copied, err)
	}
	if err := run(t, h, in); err != nil {
		t.Fatalf("the program copied again: %v", err)
	}
}

// Two users, one shared XDG_CACHE_HOME (mode 1777): the other user's
// profdeck folder, with a script at the cached program's path, is
// refused with the fix; the script never runs.
func TestOtherUsersCacheRefused(t *testing.T) {
	other := sshtest.OtherUser(t)
	dir, shared := t.TempDir(), sshtest.SharedDir(t)
	got, stolen := filepath.Join(dir, "got"), filepath.Join(dir, "stolen")
	exe := program(t, dir, got)
	h := cacheHost(t, shared)
	// Learn the path the program goes to, from a private cache.
	in, err := selfbin.Ensure(context.Background(), cacheHost(t, t.TempDir()), exe)
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(shared, "profdeck", in.Hash, "profdeck")
	plant(t, planted, stolen)
	for _, p := range []string{planted, filepath.Dir(planted), filepath.Dir(filepath.Dir(planted))} {
		other.Chown(t, p)
	}
	_, err = selfbin.Ensure(context.Background(), h, exe)
	wantRefused(t, err, filepath.Join(shared, "profdeck"), "set XDG_CACHE_HOME to a folder of yours")
	if _, serr := os.Stat(stolen); serr == nil {
		t.Fatal("the other user's script ran")
	}
}

// A cache folder of ours that others may write to is refused, with the
// chmod that fixes it.
func TestWritableCacheFolderRefused(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	h := cacheHost(t, cache)
	exe := program(t, dir, filepath.Join(dir, "got"))
	in, err := selfbin.Ensure(context.Background(), h, exe)
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Dir(in.Path)
	os.Chmod(folder, 0o777)
	wantRefused(t, run(t, h, in), folder, "chmod go-w "+folder)
	_, err = selfbin.Ensure(context.Background(), h, exe)
	wantRefused(t, err, folder, "chmod go-w "+folder)
}

// A dataset copied to the host is checked on each use: one changed there
// is copied again; one of another user is refused.
func TestDatasetCheckedOnUse(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	h := cacheHost(t, cache)
	in, err := selfbin.Ensure(context.Background(), h, program(t, dir, filepath.Join(dir, "got")))
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "prompts.jsonl")
	want := "{\"prompt\":\"hello\"}\n"
	os.WriteFile(local, []byte(want), 0o644)
	dst, err := selfbin.EnsureFile(context.Background(), h, in, local)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dst, []byte("{\"prompt\":\"planted\"}\n"), 0o644)
	if dst, err = selfbin.EnsureFile(context.Background(), h, in, local); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != want {
		t.Fatalf("the dataset on the host reads %q after a change there, want the local file's %q", b, want)
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED the other user's dataset: creating a second Unix user needs root; CI runs it as root")
	}
	sshtest.OtherUser(t).Chown(t, dst)
	_, err = selfbin.EnsureFile(context.Background(), h, in, local)
	wantRefused(t, err, dst, "remove it")
}
