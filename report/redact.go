package report

import (
	"encoding/json"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// Redacted is what a secret is replaced with.
const Redacted = remote.Redacted

// redactEvent returns ev with every secret replaced, by a JSON round trip of
// its payload when the payload mentions one (in plain or JSON-escaped form).
func redactEvent(ev phases.Event, secrets []string) phases.Event {
	b, err := json.Marshal(ev)
	if err != nil {
		return ev
	}
	s := string(b)
	hit := false
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		q := jsonEscaped(sec)
		if strings.Contains(s, q) {
			s = strings.ReplaceAll(s, q, Redacted)
			hit = true
		}
	}
	if !hit {
		return ev
	}
	out, err := phases.Decode([]byte(s))
	if err != nil {
		// The payload cannot be decoded back: keep its text, redacted,
		// rather than the secret.
		return phases.Event{Time: ev.Time, Phase: ev.Phase, Kind: ev.Kind, Data: map[string]any{"redacted": s}}
	}
	return out
}

func jsonEscaped(s string) string {
	q, _ := json.Marshal(s)
	return string(q[1 : len(q)-1])
}

// scrubText replaces every secret in s.
func scrubText(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}

// scrubEvent hides secret-looking values and URLs' user:password@
// (remote.ScrubSecrets) in every string of ev's payload: launch
// commands, log lines and error texts can carry an API key or a password
// the operator never registered with Redact.
func scrubEvent(ev phases.Event) phases.Event {
	b, err := json.Marshal(ev.Data)
	if err != nil || !remote.MayHoldSecret(b) {
		return ev
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return ev
	}
	changed := false
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			if s := remote.ScrubSecrets(t); s != t {
				changed = true
				return s
			}
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		}
		return x
	}
	v = walk(v)
	if !changed {
		return ev
	}
	data, err := json.Marshal(v)
	if err != nil {
		return ev
	}
	line, err := json.Marshal(struct {
		phases.Event
		Data json.RawMessage `json:"data"`
	}{ev, data})
	if err != nil {
		return ev
	}
	out, err := phases.Decode(line)
	if err != nil {
		return ev
	}
	return out
}
