package macro

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// seenTurn is one request the recording server passed to the emulator:
// its session header, its messages (or prompt) and the mark its answer
// started with.
type seenTurn struct {
	session string
	body    string
	mark    string
}

// recordingEmu serves an emulator and records every completion request's
// session header, body and answer mark, in arrival order.
func recordingEmu(t *testing.T, header string) (string, func() []seenTurn) {
	t.Helper()
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", StepTime: time.Millisecond, CoarseTiming: true})
	mark := regexp.MustCompile(vllmemu.AnswerMark)
	var mu sync.Mutex
	var seen []seenTurn
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "completions") {
			emu.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &teeWriter{ResponseWriter: w}
		emu.ServeHTTP(rec, r)
		mu.Lock()
		seen = append(seen, seenTurn{session: r.Header.Get(header), body: string(body), mark: mark.FindString(rec.buf.String())})
		mu.Unlock()
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); emu.Close() })
	return srv.URL, func() []seenTurn { mu.Lock(); defer mu.Unlock(); return append([]seenTurn(nil), seen...) }
}

// teeWriter keeps what a handler wrote.
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (t *teeWriter) Write(b []byte) (int, error) { t.buf.Write(b); return t.ResponseWriter.Write(b) }
func (t *teeWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// runSessions sweeps the sample sessions file at two users on the
// emulator behind url.
func runSessions(t *testing.T, url, api string) *Result {
	t.Helper()
	cfg := Complete(Config{URL: url, API: api, Concurrency: []int{2}, Requests: 14, Warmup: 0, OutputLen: 16, Seed: 3,
		Dataset: DatasetSessions, DatasetFile: "testdata/sessions.jsonl", ThinkTime: 10 * time.Millisecond,
		SessionHeader: "X-Session-ID", NoPreflight: true})
	sw, err := NewSweep(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSessionTurnsCarryRealAnswers: each turn after the first sends, in
// its history, the answers the server gave to the session's earlier
// turns (found by the emulator's marks), as the assistant's messages, with
// the session's id in the header asked for.
func TestSessionTurnsCarryRealAnswers(t *testing.T) {
	url, seen := recordingEmu(t, "X-Session-ID")
	runSessions(t, url, APIChat)
	bySession := map[string][]seenTurn{}
	for _, s := range seen() {
		if s.session == "" {
			t.Fatalf("a request without the session header: %.80s", s.body)
		}
		bySession[s.session] = append(bySession[s.session], s)
	}
	later := 0
	for id, turns := range bySession {
		for k, turn := range turns {
			var body struct {
				Messages []chatMsg `json:"messages"`
			}
			if err := json.Unmarshal([]byte(turn.body), &body); err != nil {
				t.Fatal(err)
			}
			var answers []string
			for _, m := range body.Messages {
				if m.Role == "assistant" {
					answers = append(answers, m.Content)
				}
			}
			if len(answers) != k {
				t.Fatalf("session %s turn %d sends %d earlier answers", id, k+1, len(answers))
			}
			for j, a := range answers {
				if !strings.HasPrefix(a, turns[j].mark) || turns[j].mark == "" {
					t.Fatalf("session %s turn %d: answer %d is %.40q, the server's began %q", id, k+1, j+1, a, turns[j].mark)
				}
			}
			if k > 0 {
				later++
			}
		}
	}
	if later == 0 || len(bySession) < 2 {
		t.Fatalf("%d sessions, %d later turns", len(bySession), later)
	}
}

// TestSessionLevelPerTurn: the completions API carries the history in the
// prompt; the level reports its sessions and per turn index TTFT, TPOT and
// the hit rate the server's usage said: the later turns, whose history
// (prompt and answer) the emulator kept, hit more than the first (half
// their tokens at least: the earlier turn's prompt alone is under 40%).
func TestSessionLevelPerTurn(t *testing.T) {
	url, seen := recordingEmu(t, "X-Session-ID")
	res := runSessions(t, url, APICompletions)
	earlier := map[string][]string{} // each session's answer marks so far
	marks := regexp.MustCompile(vllmemu.AnswerMark)
	for _, s := range seen() {
		var body struct {
			Prompt string `json:"prompt"`
		}
		_ = json.Unmarshal([]byte(s.body), &body)
		// The prompt holds exactly this session's earlier answers, in order.
		if got, want := marks.FindAllString(body.Prompt, -1), earlier[s.session]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("session %s turn %d: the prompt holds the answers %q, the server gave %q", s.session, len(want)+1, got, want)
		}
		earlier[s.session] = append(earlier[s.session], s.mark)
	}
	lr := res.Levels[0]
	ss := lr.Sessions
	if ss == nil || ss.Users != 2 || ss.Completed < 2 || len(ss.Turns) < 3 {
		t.Fatalf("sessions %+v", ss)
	}
	if ss.MeanDurationS <= 0 || ss.MeanTurns < 3 || ss.Header != "X-Session-ID" {
		t.Fatalf("session figures %+v", ss)
	}
	first, second := ss.Turns[0], ss.Turns[1]
	for _, tl := range ss.Turns[:2] {
		if tl.Completed == 0 || tl.MedianTTFTms <= 0 || tl.MedianTPOTms <= 0 || tl.PrefixHitRate == nil {
			t.Fatalf("turn %+v", tl)
		}
	}
	if *second.PrefixHitRate < 0.5 || *second.PrefixHitRate <= *first.PrefixHitRate || second.MeanInputTokens <= first.MeanInputTokens {
		t.Fatalf("turn 1 hit %.2f (%.0f tokens), turn 2 hit %.2f (%.0f tokens)", *first.PrefixHitRate, first.MeanInputTokens,
			*second.PrefixHitRate, second.MeanInputTokens)
	}
	if lr.Completed != 14 || res.Workload.Dataset != DatasetSessions {
		t.Fatalf("completed %d, workload %+v", lr.Completed, res.Workload)
	}
}

// A server whose context holds none of the conversations' first turns is
// refused before any level, naming the dataset; one that holds them runs
// its sessions, ending those whose history outgrows the context.
func TestSessionsAgainstTheContext(t *testing.T) {
	for _, c := range []struct {
		maxLen int
		fail   bool
	}{{30, true}, {200, false}} {
		_, url := startSessionEmu(t, vllmemu.Config{Model: "test/model", StepTime: time.Millisecond, CoarseTiming: true, MaxModelLen: c.maxLen})
		cfg := Complete(Config{URL: url, API: APIChat, Concurrency: []int{2}, Requests: 10, Warmup: 0, OutputLen: 16, Seed: 3,
			Dataset: DatasetSessions, DatasetFile: "testdata/sessions.jsonl", NoPreflight: true})
		sw, err := NewSweep(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := sw.Run(context.Background(), nil)
		if c.fail {
			if err == nil || !strings.Contains(err.Error(), "no conversation's first turn fits the model's context of 30 tokens") {
				t.Fatalf("max_model_len %d: %v", c.maxLen, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if ss := res.Levels[0].Sessions; ss == nil || ss.ContextEnded == 0 || res.Levels[0].Failed > 0 {
			t.Fatalf("max_model_len %d: sessions %+v, %d failed", c.maxLen, ss, res.Levels[0].Failed)
		}
	}
}

func startSessionEmu(t *testing.T, cfg vllmemu.Config) (*vllmemu.Emulator, string) {
	t.Helper()
	emu := vllmemu.New(cfg)
	srv := httptest.NewServer(emu)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); emu.Close() })
	return emu, srv.URL
}
