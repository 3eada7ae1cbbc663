package report

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// variantRef splits "JOURNAL#NAME", NAME a variant's name (or baseline),
// when JOURNAL is a file and NAME not a number; ok is false otherwise.
func variantRef(path string) (file, name string, ok bool) {
	i := strings.LastIndexByte(path, '#')
	if i <= 0 || i == len(path)-1 {
		return "", "", false
	}
	if _, err := strconv.Atoi(path[i+1:]); err == nil {
		return "", "", false
	}
	if _, err := os.Stat(path); err == nil {
		return "", "", false // a file of that very name
	}
	if st, err := os.Stat(path[:i]); err != nil || st.IsDir() {
		return "", "", false
	}
	return path[:i], path[i+1:], true
}

// loadVariantSweep is the last sweep with results of one variant of a
// campaign's journal (its events between its variant.started and
// variant.finished; the baseline's outside every variant).
func loadVariantSweep(path, file, name string) (Sweep, error) {
	rr, err := ReadJournalFile(file)
	if err != nil {
		return Sweep{}, err
	}
	by := VariantEvents(rr.Events)
	evs, ok := by[name]
	if !ok {
		return Sweep{}, fmt.Errorf("%s: the journal has no variant %q (it has: %s)", path, name, strings.Join(variantNames(by), ", "))
	}
	rr.Events = evs
	sw, err := sweepFromJournal(path, rr, 0, len(evs))
	sw.Path = path
	sw.Source = "variant " + name + ", " + sw.Source
	return sw, err
}

// variantNames are the names of a split journal, the baseline first.
func variantNames(by map[string][]phases.Event) []string {
	var names []string
	for n := range by {
		if n != phases.Baseline {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return append([]string{phases.Baseline}, names...)
}
