package profile

import (
	"strings"
	"testing"
)

// Each stream of a window sends its own prompt, of the same length.
func TestStreamPrompt(t *testing.T) {
	p := promptOf(8)
	seen := map[string]bool{}
	for w := 0; w < 4; w++ {
		s := streamPrompt(p, w)
		if len(strings.Fields(s)) != 8 || seen[s] {
			t.Fatalf("stream %d: %q", w, s)
		}
		seen[s] = true
	}
}
