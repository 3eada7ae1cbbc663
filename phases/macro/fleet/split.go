package fleet

// Agent is one load agent: its host alias and how many processes run there.
type Agent struct {
	Host  string `yaml:"host" json:"host"`
	Procs int    `yaml:"procs" json:"procs"`
}

// Slots expands agents into one slot per process, in order.
func Slots(agents []Agent) []string {
	var out []string
	for _, a := range agents {
		for range max(a.Procs, 1) {
			out = append(out, a.Host)
		}
	}
	return out
}

// SplitClosed splits a closed-loop concurrency c among n agents: c/n each,
// the remainder spread one apiece over the first agents.
func SplitClosed(c, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = c / n
		if i < c%n {
			out[i]++
		}
	}
	return out
}

// SplitRate splits a Poisson arrival rate: a Poisson process of rate λ is
// the union of n independent ones of rate λ/n.
func SplitRate(rate float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = rate / float64(n)
	}
	return out
}

// Arrival is one request (or session) the coordinator scheduled: when it
// starts, offset from the level's start, and the session it belongs to.
type Arrival struct {
	AtUS    int64  `json:"at_us"`
	Session string `json:"session,omitempty"`
}

// Shard deals a schedule made once by the coordinator (gamma arrivals,
// a trace, multi-turn sessions) to n agents. The turns of one session go
// to one agent; sessions are dealt round robin in order of first arrival,
// and arrivals without a session are dealt one apiece.
func Shard(sched []Arrival, n int) [][]Arrival {
	out := make([][]Arrival, n)
	owner := map[string]int{}
	next := 0
	for _, a := range sched {
		i, ok := owner[a.Session]
		if !ok || a.Session == "" {
			i = next % n
			next++
			if a.Session != "" {
				owner[a.Session] = i
			}
		}
		out[i] = append(out[i], a)
	}
	return out
}
