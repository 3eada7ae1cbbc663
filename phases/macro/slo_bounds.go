package macro

import "time"

// SLOBounds is a parsed SLO as other packages read it: each bound (0 for
// none), the share of requests that must meet them, and the SLO as the
// sweep records it.
type SLOBounds struct {
	TTFT, TPOT, E2EL time.Duration
	Share            float64
	Spec             string
}

// ParseSLOBounds reads an SLO as ParseSLO does (the same errors).
func ParseSLOBounds(spec string) (SLOBounds, error) {
	s, err := ParseSLO(spec)
	if err != nil {
		return SLOBounds{}, err
	}
	return SLOBounds{TTFT: s.ttft, TPOT: s.tpot, E2EL: s.e2el, Share: s.share, Spec: s.String()}, nil
}
