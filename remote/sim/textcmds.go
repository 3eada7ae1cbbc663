package sim

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
)

func copyLines(r io.Reader, out func(remote.Line)) error {
	if r == nil {
		return nil
	}
	b, err := io.ReadAll(r)
	if len(b) > 0 {
		Stdout(out, string(b))
	}
	return err
}

// headTail implements head/tail -n N, tail -c +N, on a file or stdin.
func (d *Deployment) headTail(cmd string, args []string, stdin io.Reader, out func(remote.Line)) error {
	n, fromByte, file := 10, int64(-1), ""
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "-n" || a == "-c") && i+1 < len(args):
			v := args[i+1]
			i++
			if a == "-c" && strings.HasPrefix(v, "+") {
				k, err := strconv.ParseInt(v[1:], 10, 64)
				if err != nil || k < 1 {
					k = 1
				}
				fromByte = k - 1
				continue
			}
			if k, err := strconv.Atoi(strings.TrimPrefix(v, "-")); err == nil {
				n = k
			}
		case strings.HasPrefix(a, "-n") && len(a) > 2:
			if k, err := strconv.Atoi(a[2:]); err == nil {
				n = k
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if k, err := strconv.Atoi(a[1:]); err == nil {
				n = k
			}
		default:
			file = a
		}
	}
	var data []byte
	if file != "" {
		b, err := d.fs.read(file)
		if err != nil {
			msg := fmt.Sprintf("%s: cannot open '%s' for reading: No such file or directory", args[0], file)
			Stderr(out, msg)
			return Exit(cmd, 1, msg)
		}
		data = b
	} else if stdin != nil {
		data, _ = io.ReadAll(stdin)
	}
	if fromByte >= 0 {
		if fromByte < int64(len(data)) {
			Stdout(out, string(data[fromByte:]))
		}
		return nil
	}
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	if args[0] == "head" && len(lines) > n {
		lines = lines[:n]
	} else if args[0] == "tail" && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	Stdout(out, strings.Join(lines, "\n"))
	return nil
}

// grep implements grep [-E] [-F] [-v] [-c] [-i] PATTERN on stdin.
func grep(cmd string, args []string, stdin io.Reader, out func(remote.Line)) error {
	invert, count, fixed, icase := false, false, false, false
	var pat string
	havePat := false
	for _, a := range args {
		if !havePat && strings.HasPrefix(a, "-") && len(a) > 1 {
			invert = invert || strings.Contains(a, "v")
			count = count || strings.Contains(a, "c")
			fixed = fixed || strings.Contains(a, "F")
			icase = icase || strings.Contains(a, "i")
			continue
		}
		if !havePat {
			pat, havePat = a, true
		}
	}
	if fixed {
		pat = regexp.QuoteMeta(pat)
	}
	if icase {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		msg := "grep: invalid pattern: " + err.Error()
		Stderr(out, msg)
		return Exit(cmd, 2, msg)
	}
	var data []byte
	if stdin != nil {
		data, _ = io.ReadAll(stdin)
	}
	matched := 0
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if re.MatchString(l) != invert {
			matched++
			if !count {
				Stdout(out, l)
			}
		}
	}
	if count {
		Stdout(out, strconv.Itoa(matched))
	}
	if matched == 0 {
		return Exit(cmd, 1, "")
	}
	return nil
}

// dateCmd is date(1) with the few formats scripts use.
func dateCmd(t time.Time, args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "+") {
			return strftime(t, a[1:])
		}
	}
	return t.Format("Mon Jan _2 15:04:05 MST 2006")
}

// strftimeLayouts are the date(1) conversions that map to one Go layout.
var strftimeLayouts = map[byte]string{
	'Y': "2006", 'm': "01", 'd': "02", 'H': "15", 'M': "04", 'S': "05",
	'z': "-0700", 'Z': "MST", 'F': "2006-01-02", 'T': "15:04:05",
}

func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		if layout, ok := strftimeLayouts[f[i]]; ok {
			b.WriteString(t.Format(layout))
			continue
		}
		switch f[i] {
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'N':
			b.WriteString(fmt.Sprintf("%09d", t.Nanosecond()))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
