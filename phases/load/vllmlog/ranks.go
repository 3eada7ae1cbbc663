package vllmlog

import (
	"fmt"
	"sort"
	"strings"
)

// maxNamedRanks bounds the ranks kept by name (a garbled log could name
// any number).
const maxNamedRanks = 4096

// procKey names a process: its pid on its host (a process prints under
// several names, "Worker" then "Worker_TP0", with one pid).
type procKey struct {
	host string
	pid  int
	name string // an engine's rank name when it prints no pid (SGLang)
}

type procInfo struct {
	host    string
	pid     int
	name    string
	rank    int
	weights *float64
	worker  bool // printed under a worker's name
	ray     bool // a Ray worker actor
	v0      bool // V0's multiprocessing worker: one per GPU past the driver's
	loading bool // it started loading weights or read them: a rank's GPU
	// rankLine: it printed its rank ("rank 0 in world size 1 is assigned …").
	rankLine bool
}

// addProcess notes what a record says of its process: loading weights
// (a rank's GPU, printed or not), a worker's name, rank and executor.
func (s *Summary) addProcess(r Record) {
	if r.PID == 0 && r.Engine == "" && r.File != "" && (r.Kind == KindRankInfo || strings.Contains(r.Msg, "nccl")) {
		// The unprefixed driver set up its own communicator: a rank.
		s.driverLogged = true
	}
	if r.Engine == "" && (r.Kind == KindLoadStart || r.Kind == KindWeightsRead) && (r.PID == 0 || isWorker(r.Proc)) {
		// A process loading weights holds a GPU: a rank, printed or not.
		s.proc(r).loading = true
	}
	if r.GluedPID != 0 && isWorker(r.GluedProc) && len(s.procs) < maxNamedRanks {
		g := s.proc(Record{PID: r.GluedPID, Host: r.Host, Rank: r.GluedRank})
		g.rank, g.worker = r.GluedRank, true
	}
	if r.PID == 0 || r.Proc == "" || !isWorker(r.Proc) {
		return
	}
	p := s.proc(r)
	if r.Rank >= 0 {
		p.rank = r.Rank
	}
	p.worker = true
	if r.Proc == "RayWorkerWrapper" {
		p.ray = true
	}
	if r.Proc == "VllmWorkerProcess" {
		// V0's multiprocessing executor: the unprefixed driver is rank 0,
		// and each worker process holds one GPU whatever it printed.
		s.v0Workers = true
		p.v0 = true
	}
}

func isWorker(name string) bool {
	return len(name) >= 6 && (name[:6] == "Worker" || name == "VllmWorkerProcess" || name == "VllmWorker" || name == "RayWorkerWrapper")
}

func (s *Summary) proc(r Record) *procInfo {
	var k procKey
	switch {
	case r.PID == 0 && r.Engine != "" && r.Proc != "":
		k = procKey{host: r.Host, name: r.Proc} // a dialect's process, known by its name ("TP0")
	case r.PID == 0:
		if s.driver == nil {
			s.driver = &procInfo{rank: 0}
		}
		return s.driver
	default:
		k = procKey{host: r.Host, pid: r.PID}
	}
	p := s.procs[k]
	if p == nil {
		p = &procInfo{host: k.host, pid: k.pid, name: k.name, rank: r.Rank}
		if len(s.procs) >= maxNamedRanks {
			// Past the bound a process is read but not kept.
			s.DroppedRanks++
			s.drop(fmt.Sprintf("processes and ranks past the first %d are not kept (no deployment has that many: a garbled log?)", maxNamedRanks))
			return p
		}
		s.procs[k] = p
	}
	return p
}

// ranks lists the worker ranks seen, inferring the missing ones.
func (s *Summary) ranks() []Rank {
	var known, unknown []*procInfo
	for _, p := range s.procs {
		if p.rank >= 0 {
			known = append(known, p)
		} else if p.weights != nil || p.ray || p.v0 || p.loading && p.worker {
			// A Ray worker is one GPU's rank whether or not its
			// weights line was kept.
			unknown = append(unknown, p)
		}
	}
	used := map[int]bool{}
	var out []Rank
	for _, p := range known {
		used[p.rank] = true
		var pid *int
		if p.pid != 0 {
			n := p.pid
			pid = &n
		}
		out = append(out, Rank{Rank: p.rank, PID: pid, Name: p.name, Host: p.host, WeightsGiB: p.weights})
	}
	if !used[0] && s.driverIsRank(len(known)+len(unknown)) {
		used[0] = true
		var w *float64
		if s.driver != nil {
			w = s.driver.weights
		}
		out = append(out, Rank{Rank: 0, WeightsGiB: w, Inferred: true})
	}
	sort.Slice(unknown, func(i, j int) bool { return unknown[i].pid < unknown[j].pid })
	next := 0
	for _, p := range unknown {
		for used[next] {
			next++
		}
		used[next] = true
		pid := p.pid
		out = append(out, Rank{Rank: next, PID: &pid, Host: p.host, WeightsGiB: p.weights, Inferred: true})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rank != out[j].Rank {
			return out[i].Rank < out[j].Rank
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return pidOf(out[i]) < pidOf(out[j])
	})
	if out == nil {
		out = []Rank{}
	}
	return out
}

func pidOf(r Rank) int {
	if r.PID == nil {
		return -1
	}
	return *r.PID
}

// driverIsRank reports whether the unprefixed process holds rank 0: it
// loaded weights; or V0's multiprocess workers run beside it and it set up
// its communicator (their driver is rank 0); or it started loading and no other
// process is a rank (a single-process engine), or V0's workers run beside it;
// a process that printed its rank likewise.
func (s *Summary) driverIsRank(others int) bool {
	switch {
	case s.v0Workers && s.driverLogged:
		return true
	case s.driver == nil:
		return false
	}
	return s.driver.weights != nil || (s.driver.loading || s.driver.rankLine) && (s.v0Workers || others == 0)
}
