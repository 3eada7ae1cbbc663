package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// A host shared with another user who made the traces' folder first
// (through a real sshd): the per-user folder passes, made 0700 with {uid}
// as the host's uid; the other user's folder, when given, fails in one
// line naming it, with the fix.
func TestProfilerFolderOnSharedHost(t *testing.T) {
	other := sshtest.OtherUser(t)
	shared := sshtest.SharedDir(t)
	theirs := filepath.Join(shared, "vllm_profile")
	other.Mkdir(t, theirs)
	_, h := sshhost.Dial(context.Background(), t, sshtest.Options{})
	cfg := &Config{Host: h, ProfilerDir: filepath.Join(shared, "vllm_profile-"+remote.UID), TraceGiB: 0.001}
	c := checkProfiler(context.Background(), cfg, nil)
	mine := filepath.Join(shared, "vllm_profile-"+strconv.Itoa(os.Getuid()))
	if c.Status != phases.CheckOK || !strings.Contains(c.Found, mine+" writable") {
		t.Fatalf("per-user folder: %s %q fix %q, want ok naming %s", c.Status, c.Found, c.Fix, mine)
	}
	if st, err := os.Stat(mine); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v, want a folder of mode 0700", mine, err)
	}
	cfg.ProfilerDir = theirs
	c = checkProfiler(context.Background(), cfg, nil)
	line := c.Found + " — fix: " + c.Fix
	if c.Status != phases.CheckFail || !strings.Contains(c.Found, theirs) || !strings.Contains(c.Found, "owned by uid "+strconv.Itoa(other.UID)) ||
		!strings.Contains(c.Fix, "server.profiler_dir") || strings.Contains(line, "\n") {
		t.Fatalf("the other user's folder: %s %q, want a failure in one line naming it and the fix", c.Status, line)
	}
	t.Log(line)
	if ents, _ := os.ReadDir(theirs); len(ents) != 0 {
		t.Fatalf("written into the other user's folder: %v", ents)
	}
	// A server in a container writes inside it: the folder on the host is
	// only written, whoever made it.
	cfg.Container = true
	if c = checkProfiler(context.Background(), cfg, nil); c.Status != phases.CheckOK {
		t.Fatalf("in a container: %s %q, want the folder only written", c.Status, c.Found)
	}
}
