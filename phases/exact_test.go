package phases

import (
	"encoding/json"
	"strings"
	"testing"
)

// A phase's parameters read back from the journal keep their integers
// exact: a 19-digit seed is not rounded through float64, and fractions
// stay float64.
func TestDecodeKeepsIntegersExact(t *testing.T) {
	line := `{"t":"2026-12-05T00:00:00Z","phase":"session","kind":"session.phase_started","data":{"name":"macro","params":{"seed":1796424059387961252,"input_len":256,"rate":0.5,"concurrency":[1,8]}}}`
	ev, err := Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	p := ev.Data.(PhaseStarted).Params.(map[string]any)
	if p["seed"] != int64(1796424059387961252) || p["input_len"] != int64(256) || p["rate"] != 0.5 {
		t.Fatalf("params %#v", p)
	}
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"seed":1796424059387961252`) {
		t.Errorf("written again: %s", b)
	}
}
