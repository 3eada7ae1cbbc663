package remote

import (
	"regexp"
	"strings"
)

// Redacted is what a secret's value is replaced with.
const Redacted = "[redacted]"

// pyList is a Python list of strings (its end may be cut off).
const pyList = `\[(?:'[^']*'|"[^"]*"|[^\]'"])*\]?`

var (
	// --api-key X, --api-key=X, --hf-token X, --password X ...
	secretFlag = regexp.MustCompile(`(?i)(--?[a-z0-9_-]*(?:api[-_]?key|token|password|passwd|secret))(=\s*|\s+)('[^']*'|"[^"]*"|\S+)`)
	// HF_TOKEN=x, OPENAI_API_KEY=x, AWS_SECRET_ACCESS_KEY=x, HF_TOKEN_X=x,
	// api_key=['x', 'y'] (a Namespace, as older vLLM logs its args); not
	// MAX_TOKENS=5.
	secretEnv = regexp.MustCompile(`(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|PASSWORD|PASSWD|SECRET)(?:_[A-Z0-9_]*)?)=(` + pyList + `|'[^']*'|"[^"]*"|\S+)`)
	// Authorization: Bearer x
	bearer = regexp.MustCompile(`(?i)(bearer\s+)[^\s'"]+`)
	// 'api_key': 'x' and 'api_key': ['x', 'y'] (a Python dict, as vLLM
	// logs its non-default args; recent versions take a list of keys)
	secretDict = regexp.MustCompile(`(?i)(['"][a-z0-9_-]*(?:api[-_]?key|token|password|passwd|secret)['"]\s*:\s*)(` + pyList + `|'[^']*'|"[^"]*")`)
	// keys and tokens by their well-known shapes, wherever they stand (a
	// server's error that echoes the key it refused): sk-…, hf_…, ghp_…
	secretShape = regexp.MustCompile(`\b(?:sk-(?:proj-|ant-)?|hf_|gh[pousr]_|xox[abp]-)[A-Za-z0-9_-]{16,}`)
	// a quick test for any of the above
	secretHint = regexp.MustCompile(`(?i)key|token|passw|secret|bearer|://[^/\s"]*@|\bsk-|\bhf_|\bgh[pousr]_|\bxox`)
)

// MayHoldSecret is a quick test: false means ScrubSecrets without known
// values leaves b's text as it is.
func MayHoldSecret(b []byte) bool { return secretHint.Match(b) }

// minKnown is the shortest known secret replaced wherever it appears: a
// shorter one would blank out ordinary words.
const minKnown = 4

// ScrubSecrets hides the values of secret-looking flags (--api-key,
// --hf-token, --password), environment assignments (HF_TOKEN=,
// OPENAI_API_KEY=), Bearer tokens, Python-dict and Namespace entries
// ('api_key': ['…'], api_key=…), keys of well-known shapes (sk-…, hf_…) and
// URLs' user:password@ (MaskURL) in s: a launch command, a log line or an
// error text, so it can be shown, journalled and written to the notebook.
// Each of known (the API key in use, a URL's password) is hidden wherever
// it stands: a server's error that echoes it back.
func ScrubSecrets(s string, known ...string) string {
	for _, k := range known {
		if len(k) >= minKnown && strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, Redacted)
		}
	}
	if !secretHint.MatchString(s) {
		return s
	}
	s = secretFlag.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = secretEnv.ReplaceAllStringFunc(s, func(m string) string {
		name, value, _ := strings.Cut(m, "=")
		if strings.HasPrefix(value, Redacted) {
			return m // a flag's value, hidden already
		}
		if strings.HasPrefix(value, "[") {
			return name + "=['" + Redacted + "']"
		}
		return name + "=" + Redacted
	})
	s = bearer.ReplaceAllString(s, "${1}"+Redacted)
	s = secretDict.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretDict.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], "[") {
			return sub[1] + "['" + Redacted + "']"
		}
		return sub[1] + "'" + Redacted + "'"
	})
	s = secretShape.ReplaceAllString(s, Redacted)
	return MaskURL(s)
}
