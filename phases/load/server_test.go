package load

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/remote"
)

// failingHost fails every command but the creation of a file the way a
// host does: an ExitError that quotes the command line.
type failingHost struct{ remote.Host }

func (failingHost) Run(_ context.Context, cmd string, _ io.Reader, _ func(remote.Line)) error {
	if strings.HasPrefix(cmd, "rm -f ") {
		return nil
	}
	return &remote.ExitError{Cmd: cmd, Status: 1, Stderr: "no"}
}

func (failingHost) ReadFile(context.Context, string) ([]byte, error) { return nil, os.ErrNotExist }

func (failingHost) WriteFile(context.Context, string, []byte, os.FileMode) error { return nil }

// A launch that fails must not carry the campaign's secrets into the error,
// which the pane shows and the journal keeps.
func TestStartErrorRedacted(t *testing.T) {
	s := &Server{Host: failingHost{}, Settings: Settings{
		Launch: "vllm serve m --api-key sk-secret1", Env: map[string]string{"HF_TOKEN": "hf_secret2"}, Log: "/tmp/server.log"}}
	_, err := s.Start(context.Background(), nil, nil)
	if err == nil {
		t.Fatal("Start on a failing host succeeded")
	}
	for _, secret := range []string{"sk-secret1", "hf_secret2"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows %s: %v", secret, err)
		}
	}
	var ee *remote.ExitError
	if !errors.As(err, &ee) || ee.Status != 1 {
		t.Errorf("error %v does not unwrap to the host's ExitError", err)
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error %v lost the command", err)
	}
}
