package load

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// How a launch is run: the campaign's launch, with the extra flags
// appended, is one shell command line (`cd /opt && …`, `prep; vllm serve …`
// and `source venv/bin/activate && vllm serve …` work as typed), run by
// bash where the host has it (sh otherwise), detached in its own session.
// Its environment (server.env, the profiler's variable, a node's rank) is
// written to a file only its owner can read; the shell exports every
// variable of it (set -a), so every command of the line sees them, and
// removes the file before the launch runs. No value ever stands on a
// command line, where ps would show it to every user of the host.

// LaunchCommand is the command line the launched shell runs: the
// campaign's launch with the extra flags appended, each shell-quoted. A
// launch that is a `docker run` passes each variable of the environment
// into the container by name (-e NAME), the value coming from the shell's
// environment. It holds no value of the environment.
func (s *Server) LaunchCommand(extraFlags []string, extraEnv map[string]string) (string, error) {
	launch := strings.TrimSpace(s.Settings.Launch)
	if launch == "" {
		return "", errors.New("no launch command: set server.launch in the campaign file")
	}
	if _, err := s.launchEnv(extraEnv); err != nil {
		return "", err
	}
	cmd := launch
	if len(extraFlags) > 0 {
		cmd += " " + remote.QuoteArgs(extraFlags...)
	}
	names := slices.Sorted(maps.Keys(s.shownEnv(extraEnv)))
	if rest, ok := strings.CutPrefix(cmd, "docker run "); ok && len(names) > 0 {
		// The environment belongs inside the container.
		var flags []string
		for _, k := range names {
			flags = append(flags, "-e", k)
		}
		return "docker run " + remote.QuoteArgs(flags...) + " " + rest, nil
	}
	return cmd, nil
}

// shownEnv is the environment the campaign and the caller give the launch
// (server.env, then extraEnv over it), without the node's variables.
func (s *Server) shownEnv(extraEnv map[string]string) map[string]string {
	env := map[string]string{}
	maps.Copy(env, s.Settings.Env)
	maps.Copy(env, extraEnv)
	return env
}

// launchEnv is the whole environment of the launch: the node's variables,
// server.env over them, extraEnv over both; every name is checked.
func (s *Server) launchEnv(extraEnv map[string]string) (map[string]string, error) {
	env := map[string]string{}
	maps.Copy(env, s.NodeEnv)
	maps.Copy(env, s.shownEnv(extraEnv))
	for k := range env {
		if !validEnvName(k) {
			return nil, fmt.Errorf("environment variable name %q is not valid", k)
		}
	}
	return env, nil
}

// envFile is where the launch's environment waits for the launched
// shell, which removes it once read: in Settings.WorkDir (made private and
// checked, see remote.PrivateDir) when set, else beside the log.
func (s *Server) envFile(ctx context.Context) (string, error) {
	name := path.Base(s.LogPath()) + ".env"
	if dir := s.Settings.WorkDir; dir != "" {
		d, err := remote.PrivateDir(ctx, s.Host, dir, "the campaign's work dir")
		if err != nil {
			return "", &phases.InputError{Err: err}
		}
		return path.Join(d, name), nil
	}
	p := s.LogPath() + ".env"
	if !strings.Contains(p, "/") {
		p = "./" + p // `. NAME` without a slash would search PATH
	}
	return p, nil
}

// envFileText is env as shell assignments, one a line, each value quoted.
func envFileText(env map[string]string) []byte {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		b.WriteString(k + "=" + remote.Quote(env[k]) + "\n")
	}
	return []byte(b.String())
}

// launchScript is the script the launched shell runs: the environment file
// (when there is one) exported and removed, then the launch.
func launchScript(cmd, envPath string) string {
	if envPath == "" {
		return cmd
	}
	q := remote.QuotePath(envPath)
	return "set -a; . " + q + "; set +a; rm -f " + q + "; " + cmd
}

// detachedCommand starts script detached in its own session (setsid +
// nohup), its output to log, its environment carrying the launch's mark
// (see identity.go), and prints its pid (its process group).
func detachedCommand(script, log, mark string) string {
	return fmt.Sprintf(`nohup setsid env %s=%s "$(command -v bash || echo sh)" -c %s > %s 2>&1 < /dev/null & echo $!`, markVar, mark,
		remote.Quote(script), remote.QuotePath(log))
}

// envNote names the variables of env, never their values: " (environment:
// A, B)", or "" when there are none.
func envNote(env map[string]string) string {
	if len(env) == 0 {
		return ""
	}
	return " (environment: " + strings.Join(slices.Sorted(maps.Keys(env)), ", ") + ")"
}

func validEnvName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// profilerDir resolves the profiler's directory ({uid} as the host's uid)
// in the flags and environment that enable the profiler, and makes it a
// private folder of the user's (see remote.PrivateDir) when the launch
// writes traces there, so that no other user's traces are read as this
// server's: one that is another user's, a link or writable by others is
// bad input naming it. A launch in a container writes inside the
// container; its folder is left as is.
func (s *Server) profilerDir(ctx context.Context, flags []string, env map[string]string) ([]string, map[string]string, error) {
	dir := s.Settings.ProfilerDir
	uses := false
	for _, v := range env {
		uses = uses || dir != "" && strings.Contains(v, dir)
	}
	for _, f := range flags {
		uses = uses || dir != "" && strings.Contains(f, dir)
	}
	if !uses {
		return flags, env, nil
	}
	got, err := remote.ResolveUID(ctx, s.Host, dir)
	if err == nil && s.Settings.Container == "" && !strings.HasPrefix(strings.TrimSpace(s.Settings.Launch), "docker ") {
		got, err = remote.PrivateDir(ctx, s.Host, dir, "server.profiler_dir")
	}
	var pe *remote.PathError
	if errors.As(err, &pe) {
		return nil, nil, &phases.InputError{Err: err}
	} else if err != nil {
		return nil, nil, err
	}
	flags = slices.Clone(flags)
	for i, f := range flags {
		flags[i] = strings.ReplaceAll(f, dir, got)
	}
	env = maps.Clone(env)
	for k, v := range env {
		env[k] = strings.ReplaceAll(v, dir, got)
	}
	return flags, env, nil
}
