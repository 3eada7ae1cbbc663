// Package fleet runs one macro level across several load agents and merges
// what they measured: it splits the level between the agents, estimates
// each agent's clock offset, and merges their HDR histograms so that the
// percentiles are those of all requests, never averages of percentiles.
package fleet

import "github.com/profdeck/profdeck/phases/macro/hdrsec"

// The histograms' types (phases/macro/hdrsec), as the merge uses them.
type (
	Second   = hdrsec.Second
	Recorder = hdrsec.Recorder
	Merged   = hdrsec.Merged
)

// Precision is the largest relative error of a histogram's percentile.
const Precision = hdrsec.Precision

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return hdrsec.NewRecorder() }

// NewMerged returns an empty merge.
func NewMerged() *Merged { return hdrsec.NewMerged() }
