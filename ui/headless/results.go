package headless

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/remote/localfs"
)

// ResultsDir is the folder a result document goes to by default when no
// journal names one: ./profdeck-results, made when missing.
var ResultsDir = "profdeck-results"

// keepResult names the result document when --json (or --result-filename)
// did not: a new file NAME-YYYYMMDD-HHMMSS.json in dir (--result-dir)
// when given, else beside the campaign's journal when it exists, else in
// ResultsDir. The folder is made when missing and checked as --json is;
// the path is said on stderr once the document is written (sayKept).
// With dir and --result-filename, the file is dir's, as vLLM joins them.
func (c *Command) keepResult(camp *campaign.Campaign, dir, name string) error {
	if c.JSONPath != "" {
		if dir != "" && c.Set("result-filename") && !filepath.IsAbs(c.JSONPath) {
			c.JSONPath = filepath.Join(dir, c.JSONPath)
			return c.checkKept(filepath.Dir(c.JSONPath), "--result-dir")
		}
		return nil
	}
	flag := "--result-dir"
	if dir == "" {
		dir, flag = ResultsDir, "the results folder"
		if j := camp.JournalPath(); fileExists(j) {
			dir, flag = filepath.Dir(j), "the journal's folder"
		}
	}
	stamp := time.Now().Format("20060102-150405")
	path := filepath.Join(dir, name+"-"+stamp+".json")
	for i := 2; fileExists(path); i++ {
		path = filepath.Join(dir, fmt.Sprintf("%s-%s-%d.json", name, stamp, i))
	}
	c.JSONPath, c.kept = path, true
	return c.checkKept(dir, flag)
}

// checkKept makes dir and checks that the result document can be written
// there and is none of the command's inputs.
func (c *Command) checkKept(dir, flag string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return BadInput("%s %s: %v", flag, dir, localfs.UnwrapPath(err))
	}
	if err := localfs.CheckOutput(c.JSONPath, false); err != nil {
		return BadInput("%s: %s: %v", flag, c.JSONPath, err)
	}
	return c.CheckOverlap()
}

// sayKept says where the result document went, when the command chose the
// path (keepResult).
func (c *Command) sayKept() {
	if c.kept {
		fmt.Fprintln(c.Stderr, "result:", c.JSONPath)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// keep names the sweep's result document (keepResult: search-… for a
// search, sweep-… else) and, with --save-detailed, opens the per-request
// records beside it unless --jsonl names them.
func (f *sweepFlags) keep(c *Command, camp *campaign.Campaign) error {
	name := "sweep"
	if camp.Macro.Search != "" {
		name = "search"
	}
	v := f.vllm
	if v == nil {
		v = &vllmArgs{}
	}
	if err := c.keepResult(camp, v.resultDir, name); err != nil {
		return err
	}
	if v.detailed && c.JSONLPath == "" && c.JSONPath != "-" {
		path := strings.TrimSuffix(c.JSONPath, ".json") + ".requests.jsonl"
		fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return BadInput("--save-detailed: %s: %v", path, localfs.UnwrapPath(err))
		}
		c.JSONLPath, c.jsonl, c.jsonlW = path, fh, &lockedWriter{w: fh}
		fmt.Fprintln(c.Stderr, "requests:", path)
	}
	return nil
}
