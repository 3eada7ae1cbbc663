package report

import (
	"encoding/json"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// redactEvent returns ev with every secret replaced, by a JSON round trip of
// its payload when the payload mentions one.
func redactEvent(ev phases.Event, secrets []string) phases.Event {
	b, err := json.Marshal(ev)
	if err != nil {
		return ev
	}
	s := string(b)
	hit := false
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			hit = true
		}
	}
	if !hit {
		return ev
	}
	// Secrets are matched in their JSON-escaped form too.
	for _, sec := range secrets {
		q, _ := json.Marshal(sec)
		s = strings.ReplaceAll(s, string(q[1:len(q)-1]), "[redacted]")
	}
	out, err := phases.Decode([]byte(s))
	if err != nil {
		return ev
	}
	return out
}
