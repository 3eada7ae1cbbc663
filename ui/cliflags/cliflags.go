// Package cliflags is how every profdeck command reads its flags: a wrong
// flag is said in one line that names it and points to -h, and -h lists the
// flags as they are typed (--name, -c for one letter).
package cliflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// New is a command's flag set: quiet while parsing (ParseFlags says
// a wrong flag in one line).
func New(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// Parse parses args with fs. -h prints the help (usage, then every
// flag as --name) on w and returns flag.ErrHelp; a wrong flag returns one
// line that names it and points to -h, e.g. "flag provided but not
// defined: --max-concurrenc (see profdeck sweep -h)".
func Parse(fs *flag.FlagSet, args []string, usage string, w io.Writer) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		PrintHelp(w, fs, usage)
		return err
	}
	return fmt.Errorf("%s (see profdeck %s -h)", dashes(err.Error()), fs.Name())
}

// flagName is a flag named in the flag package's messages ("-name").
var flagName = regexp.MustCompile(`(^|[ :])-([A-Za-z0-9][A-Za-z0-9_.-]+)`)

// dashes writes the flag package's "-name" as "--name" (one-letter flags
// keep one dash), as the usage and the help spell them.
func dashes(msg string) string {
	return flagName.ReplaceAllString(msg, "$1--$2")
}

// PrintHelp prints usage and then every flag of fs, spelled as typed:
// --name for words, -c for a letter.
func PrintHelp(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprintln(w, "usage: "+usage)
	fmt.Fprintln(w)
	fs.VisitAll(func(f *flag.Flag) {
		typ, text := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		line := "  " + dash + f.Name
		if typ != "" {
			line += " " + typ
		}
		text = strings.ReplaceAll(text, "\n", "\n    \t")
		if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "0s" {
			if typ == "string" {
				d = fmt.Sprintf("%q", d)
			}
			text += " (default " + d + ")"
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, text)
	})
}
