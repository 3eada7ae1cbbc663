package ui

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// terminalPrompt asks the operator on the terminal before the cockpit takes
// the screen (host keys, key passphrases). Secrets are read without echo.
func terminalPrompt(w io.Writer) func(question string, secret bool) (string, error) {
	return func(question string, secret bool) (string, error) {
		fmt.Fprint(w, question+" ")
		if secret && term.IsTerminal(int(os.Stdin.Fd())) {
			b, err := term.ReadPassword(int(os.Stdin.Fd()))
			fmt.Fprintln(w)
			return string(b), err
		}
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		return strings.TrimSpace(line), err
	}
}
