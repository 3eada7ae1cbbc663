package cliflags

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	fs := New("sweep")
	fs.String("json", "", "write the result")
	fs.String("c", "", "campaign file")
	fs.Int("requests", 64, "requests per level")
	var help bytes.Buffer
	if err := Parse(fs, []string{"-h"}, "profdeck sweep [--json FILE]", &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	want := "usage: profdeck sweep [--json FILE]\n\n  -c string\n    \tcampaign file\n  --json string\n    \twrite the result\n  --requests int\n    \trequests per level (default 64)\n"
	if help.String() != want {
		t.Fatalf("-h printed\n%s\nwant\n%s", help.String(), want)
	}
	for args, msg := range map[string]string{
		"--max-concurrency=8": "flag provided but not defined: --max-concurrency (see profdeck sweep -h)",
		"-requests=x":         `invalid value "x" for flag --requests: parse error (see profdeck sweep -h)`,
		"-x":                  "flag provided but not defined: -x (see profdeck sweep -h)",
	} {
		var out bytes.Buffer
		err := Parse(New("sweep"), []string{args}, "", &out)
		if fs := New("sweep"); fs != nil && args == "-requests=x" {
			fs.Int("requests", 0, "")
			err = Parse(fs, []string{args}, "", &out)
		}
		if err == nil || err.Error() != msg || out.Len() != 0 || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (printed %q), want %q", args, err, out.String(), msg)
		}
	}
}
