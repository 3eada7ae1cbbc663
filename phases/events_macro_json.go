package phases

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// MarshalJSON writes the level with its asked-for percentiles as keys of
// their own (p95_ttft_ms …), as vllm bench serve writes them; a key the
// level already has (p90_…, p99_…) is not repeated.
func (l LevelResult) MarshalJSON() ([]byte, error) {
	type plain LevelResult
	b, err := json.Marshal(plain(l))
	if err != nil || len(l.Percentiles) == 0 || len(b) < 2 {
		return b, err
	}
	out := append([]byte(nil), b[:len(b)-1]...)
	for _, k := range slices.Sorted(maps.Keys(l.Percentiles)) {
		q := strconv.Quote(k)
		if bytes.Contains(b, []byte(q+":")) {
			continue
		}
		out = append(out, ',')
		out = append(out, q...)
		out = append(out, ':')
		out = strconv.AppendFloat(out, l.Percentiles[k], 'g', -1, 64)
	}
	return append(out, '}'), nil
}
