package remote

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Quote's words reach a real POSIX shell unchanged, whatever they hold.
func TestQuoteThroughShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no sh")
		}
		t.Skip("no sh")
	}
	words := []string{
		"", "plain", "a b", "it's", "'", "''", `"`, `\`, `\'`, "$HOME", "`id`", "$(id)",
		"a;b", "a|b", "a&b", "x > /tmp/y", "*", "~", "~/x", "-n", "new\nline", "tab\there",
		"--api-key=sk-1 2", "ünïcode", "a'b'c", "%s", "@:,./-_+=",
	}
	line := `printf '%s\0' ` + QuoteArgs(words...)
	out, err := exec.Command(sh, "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("the shell saw %d words, want %d: %q", len(got), len(words), got)
	}
	for i, w := range words {
		if got[i] != w {
			t.Errorf("Quote(%q) = %s reached the shell as %q", w, Quote(w), got[i])
		}
	}
}

// Words made only of safe characters stay as they are; every other word is
// quoted.
func TestQuoteLeavesSafeWords(t *testing.T) {
	for _, w := range []string{"python3", "/var/log/vllm/server.log", "key=value", "user@host:22", "a,b", "50%"} {
		if q := Quote(w); q != w {
			t.Errorf("Quote(%q) = %s, want it unquoted", w, q)
		}
	}
	for _, w := range []string{"a b", "$x", "~", "*", "a'b"} {
		if q := Quote(w); q == w {
			t.Errorf("Quote(%q) left it unquoted", w)
		}
	}
}

// FuzzQuote: any word without a NUL byte (which no shell word can hold)
// reaches sh unchanged.
func FuzzQuote(f *testing.F) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		if os.Getenv("CI") != "" {
			f.Fatal("no sh")
		}
		f.Skip("no sh")
	}
	for _, s := range []string{"", "a b", "it's", `\'"$(id)"`, "~/x", "new\nline"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return
		}
		out, err := exec.Command(sh, "-c", "printf '%s' "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("Quote(%q) = %s: sh: %v", s, Quote(s), err)
		}
		if string(out) != s {
			t.Errorf("Quote(%q) = %s reached the shell as %q", s, Quote(s), out)
		}
	})
}

func TestQuotePathKeepsHome(t *testing.T) {
	for in, want := range map[string]string{
		"~":           `"$HOME"`,
		"~/a b/c":     `"$HOME"/'a b/c'`,
		"/var/log/x":  "/var/log/x",
		"~user/x":     `'~user/x'`,
		"dir/~/x":     `'dir/~/x'`,
		"~/$(reboot)": `"$HOME"/'$(reboot)'`,
	} {
		if got := QuotePath(in); got != want {
			t.Errorf("QuotePath(%q) = %s, want %s", in, got, want)
		}
	}
}
