package phases

// MonotonePercentiles makes each latency's percentiles non-decreasing
// (p50 ≤ p90 ≤ p99 for TTFT, TPOT, ITL and E2EL), whatever computed them:
// figures of one level from different sources (the client's histogram, a
// load generator's report, the server's buckets) can cross by a rounding
// or a bucket, and a level line must never show p90 above p99. A
// percentile below a lower one is raised to it.
func (l *LevelResult) MonotonePercentiles() {
	for _, ps := range [][]*float64{
		{&l.MedianTTFTms, &l.P90TTFTms, &l.P99TTFTms},
		{&l.MedianTPOTms, &l.P90TPOTms, &l.P99TPOTms},
		{&l.MedianITLms, &l.P90ITLms, &l.P99ITLms},
		{&l.MedianE2ELms, &l.P90E2ELms, &l.P99E2ELms},
	} {
		for i := 1; i < len(ps); i++ {
			if *ps[i] > 0 && *ps[i] < *ps[i-1] {
				*ps[i] = *ps[i-1]
			}
		}
	}
}
