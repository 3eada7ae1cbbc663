package remote_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// A private folder is made 0700 with {uid} resolved; a folder that is a
// link, is writable by others, or is a file is one line naming it and the
// fix.
func TestPrivateDir(t *testing.T) {
	ctx, h := context.Background(), local.New()
	base := t.TempDir()
	got, err := remote.PrivateDir(ctx, h, filepath.Join(base, "profdeck-"+remote.UID), "--workdir")
	want := filepath.Join(base, "profdeck-"+strconv.Itoa(os.Getuid()))
	if err != nil || got != want {
		t.Fatalf("PrivateDir = %q, %v; want %q", got, err, want)
	}
	if st, _ := os.Stat(want); st.Mode().Perm() != 0o700 {
		t.Fatalf("made with mode %v, want 0700", st.Mode().Perm())
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	link := filepath.Join(base, "link")
	os.Symlink(want, link)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	cases := map[string]string{open: "chmod go-w " + open, link: "a symbolic link", file: "not a folder"}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		os.Mkdir(theirs, 0o700)
		sshtest.OtherUser(t).Chown(t, theirs)
		cases[theirs] = "owned by uid"
	} else {
		t.Log("SKIPPED the other user's folder: creating a second Unix user needs root; CI runs it as root")
	}
	for dir, fix := range cases {
		_, err := remote.PrivateDir(ctx, h, dir, "--workdir")
		var pe *remote.PathError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), fix) ||
			!strings.Contains(err.Error(), "--workdir") || strings.Contains(err.Error(), "\n") {
			t.Errorf("PrivateDir(%s) = %v, want one line naming it and %q", dir, err, fix)
		}
	}
}

// Create never writes through a link planted at the path: the link goes,
// its target is untouched, and the new file holds the data.
func TestCreateNotThroughLink(t *testing.T) {
	ctx, h := context.Background(), local.New()
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	os.WriteFile(target, []byte("keep\n"), 0o644)
	p := filepath.Join(dir, "server.log.env")
	os.Symlink(target, p)
	if err := remote.Create(ctx, h, p, []byte("HF_TOKEN=x\n"), "600"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Fatalf("the link's target now reads %q", b)
	}
	st, err := os.Lstat(p)
	if err != nil || st.Mode()&os.ModeSymlink != 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want a file of mode 0600", p, st.Mode(), err)
	}
}
