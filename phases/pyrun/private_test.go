package pyrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// Two users on a real sshd, one shared /tmp-like folder (mode 1777): the
// scripts go to a folder of the user's own, made 0700; a folder of that
// name the other user made first is refused (bad input naming it), and a
// link the other user put where a script goes is never written through.
func TestUploadPrivateOnSharedHost(t *testing.T) {
	other := sshtest.OtherUser(t)
	shared := sshtest.SharedDir(t)
	_, h := sshhost.Dial(context.Background(), t, sshtest.Options{})
	ctx := context.Background()
	p, err := pyrun.Upload(ctx, h, filepath.Join(shared, "profdeck-{uid}"), "micro", []byte("print(1)\n"), ".py")
	mine := filepath.Join(shared, "profdeck-"+strconv.Itoa(os.Getuid()))
	if err != nil || filepath.Dir(p) != mine {
		t.Fatalf("Upload = %q, %v; want a script in %s", p, err, mine)
	}
	if st, _ := os.Stat(mine); st.Mode().Perm() != 0o700 {
		t.Fatalf("work dir mode %v, want 0700", st.Mode().Perm())
	}
	// A link where the next script goes: the link goes, its target stays.
	target := filepath.Join(shared, "target")
	os.WriteFile(target, []byte("keep\n"), 0o644)
	next := filepath.Join(mine, pyrun.ScriptName("micro", []byte("print(2)\n"), ".py"))
	os.Symlink(target, next)
	if _, err := pyrun.Upload(ctx, h, mine, "micro", []byte("print(2)\n"), ".py"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Fatalf("written through the link: its target reads %q", b)
	}
	// The other user's folder where the scripts would go.
	theirs := filepath.Join(shared, "profdeck-theirs")
	os.Mkdir(theirs, 0o755)
	other.Chown(t, theirs)
	_, err = pyrun.Upload(ctx, h, theirs, "micro", []byte("print(1)\n"), ".py")
	var ie *phases.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), theirs) || !strings.Contains(err.Error(), "--workdir") {
		t.Fatalf("Upload to the other user's folder: %v; want bad input naming it and the fix", err)
	}
	if ents, _ := os.ReadDir(theirs); len(ents) != 0 {
		t.Fatalf("a script was written to the other user's folder: %v", ents)
	}
}
