package components

import "strings"

// Field is one figure of a line of figures (a label and its value). Short
// is the same figure with a shorter label ("" when it has none); Rank is
// how much it matters: a line too narrow for every figure leaves out those
// of lowest Rank first.
type Field struct {
	Text, Short string
	Rank        int
}

// Fields lays figures out on one line of at most w cells, joined by sep
// and in their order: whole when they fit, else with their short labels,
// else without the lowest-ranked (of equal rank, the latest) one by one.
// When even the highest-ranked figure does not fit, the line is cut with
// "…".
func Fields(fields []Field, sep string, w int) string {
	if w <= 0 {
		return ""
	}
	texts := make([]string, len(fields))
	for i, f := range fields {
		texts[i] = f.Text
	}
	if line := strings.Join(texts, sep); Width(line) <= w {
		return line
	}
	kept := make([]int, 0, len(fields)) // indexes into fields, in order
	for i, f := range fields {
		if f.Short != "" {
			texts[i] = f.Short
		}
		kept = append(kept, i)
	}
	for {
		parts := make([]string, len(kept))
		for j, i := range kept {
			parts[j] = texts[i]
		}
		line := strings.Join(parts, sep)
		if Width(line) <= w || len(kept) <= 1 {
			return Truncate(line, w)
		}
		drop := 0
		for j, i := range kept {
			if fields[i].Rank <= fields[kept[drop]].Rank {
				drop = j
			}
		}
		kept = append(kept[:drop], kept[drop+1:]...)
	}
}
