package remote

import "regexp"

// Masked replaces the user and password part of a URL when it is shown.
const Masked = "xxxxx"

// reUserinfo is a URL's scheme and userinfo: http://user:password@.
var reUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s"'<>]+@`)

// MaskURL hides the userinfo (user:password@) of every URL in s, a bare
// URL or a text that mentions URLs (an error, a log line, a command), so
// that a password or token given in a URL is used but never shown, written
// or journalled: http://bench:pw@host:8000 reads http://xxxxx@host:8000.
func MaskURL(s string) string {
	if !containsSchemeAt(s) {
		return s
	}
	return reUserinfo.ReplaceAllString(s, "${1}"+Masked+"@")
}

// containsSchemeAt is a quick test for "://" followed later by "@".
func containsSchemeAt(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if s[i] == ':' && s[i+1] == '/' && s[i+2] == '/' {
			for j := i + 3; j < len(s); j++ {
				if s[j] == '@' {
					return true
				}
			}
			return false
		}
	}
	return false
}

// MaskErr is err with MaskURL applied to its text; errors.Is and errors.As
// still see err.
func MaskErr(err error) error {
	if err == nil {
		return nil
	}
	if s := err.Error(); MaskURL(s) != s {
		return maskedErr{err}
	}
	return err
}

type maskedErr struct{ err error }

func (e maskedErr) Error() string { return MaskURL(e.err.Error()) }
func (e maskedErr) Unwrap() error { return e.err }
