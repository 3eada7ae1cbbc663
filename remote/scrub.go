package remote

import "regexp"

// Redacted is what a secret's value is replaced with.
const Redacted = "[redacted]"

var (
	// --api-key X, --api-key=X, --hf-token X, --password X ...
	secretFlag = regexp.MustCompile(`(?i)(--?[a-z0-9_-]*(?:api[-_]?key|token|password|passwd|secret))(=\s*|\s+)('[^']*'|"[^"]*"|\S+)`)
	// HF_TOKEN=x, OPENAI_API_KEY=x, AWS_SECRET_ACCESS_KEY=x, HF_TOKEN_X=x;
	// not MAX_TOKENS=5.
	secretEnv = regexp.MustCompile(`(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|PASSWORD|PASSWD|SECRET)(?:_[A-Z0-9_]*)?)=('[^']*'|"[^"]*"|\S+)`)
	// Authorization: Bearer x
	bearer = regexp.MustCompile(`(?i)(bearer\s+)[^\s'"]+`)
	// 'api_key': 'x' (a Python dict, as vLLM logs its non-default args)
	secretDict = regexp.MustCompile(`(?i)(['"][a-z0-9_-]*(?:api[-_]?key|token|password|passwd|secret)['"]\s*:\s*)('[^']*'|"[^"]*")`)
	// a quick test for any of the above
	secretHint = regexp.MustCompile(`(?i)key|token|passw|secret|bearer|://[^/\s"]*@`)
)

// MayHoldSecret is a quick test: false means ScrubSecrets leaves b's text
// as it is.
func MayHoldSecret(b []byte) bool { return secretHint.Match(b) }

// ScrubSecrets hides the values of secret-looking flags (--api-key,
// --hf-token, --password), environment assignments (HF_TOKEN=,
// OPENAI_API_KEY=), Bearer tokens, Python-dict entries ('api_key': ...) and
// URLs' user:password@ (MaskURL) in s: a launch command, a log line or an
// error text, so it can be shown, journalled and written to the notebook.
func ScrubSecrets(s string) string {
	if !secretHint.MatchString(s) {
		return s
	}
	s = secretFlag.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = secretEnv.ReplaceAllString(s, "${1}="+Redacted)
	s = bearer.ReplaceAllString(s, "${1}"+Redacted)
	s = secretDict.ReplaceAllString(s, "${1}'"+Redacted+"'")
	return MaskURL(s)
}
