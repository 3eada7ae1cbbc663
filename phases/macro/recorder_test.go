package macro_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The recording server streams one-token chunks every recStep and keeps its
// own send times: when each request arrived and when each chunk's write
// returned. It runs in a child process (the test binary with
// PROFDECK_REC_CHILD set), so its timing shares no Go scheduler with the
// client under test. GET /records returns what it kept since the last call.

const recStep = 2 * time.Millisecond

// recRequest is one request as the server saw it: the chunks' send times,
// in nanoseconds since the request arrived.
type recRequest struct {
	Sent []int64 `json:"sent"`
}

type recorder struct {
	mu   sync.Mutex
	reqs []recRequest
	// For the path tests: no /health, a slow one, or several token events
	// written at once.
	noHealth    bool
	healthDelay time.Duration
	perWrite    int
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	switch r.URL.Path {
	case "/v1/models":
		io.WriteString(w, `{"object":"list","data":[{"id":"test/model","object":"model","max_model_len":100000}]}`)
	case "/health":
		if rc.noHealth {
			http.NotFound(w, r)
		}
		time.Sleep(rc.healthDelay)
	case "/records":
		rc.mu.Lock()
		b, _ := json.Marshal(rc.reqs)
		rc.reqs = nil
		rc.mu.Unlock()
		w.Write(b)
	case "/v1/completions":
		rc.stream(w, r, t0)
	default:
		http.NotFound(w, r)
	}
}

// stream sends max_tokens one-token chunks, the first recStep after the
// request arrived and each next one recStep after the previous was sent
// (never two at once, however late the process runs); the last carries the
// finish reason, the final usage and [DONE].
func (rc *recorder) stream(w http.ResponseWriter, r *http.Request, t0 time.Time) {
	var q struct {
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil || q.MaxTokens < 1 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	// For scripts/sshpath-hops: when the request arrived and when the first
	// chunk was written, on this machine's clock.
	w.Header().Set("X-Arrived-Unix-Ns", strconv.FormatInt(t0.UnixNano(), 10))
	fl := w.(http.Flusher)
	sent := make([]int64, 0, q.MaxTokens)
	last := t0
	for i := 1; i <= q.MaxTokens; i++ {
		time.Sleep(time.Until(last.Add(recStep)))
		if i == 1 {
			w.Header().Set("X-First-Write-Unix-Ns", strconv.FormatInt(time.Now().UnixNano(), 10))
		}
		fin := "null"
		if i == q.MaxTokens {
			fin = `"length"`
		}
		fmt.Fprintf(w, `data: {"id":"cmpl-1","object":"text_completion","created":0,"model":"test/model","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":%s}],"usage":{"prompt_tokens":8,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", fin, 8+i, i)
		if i == q.MaxTokens {
			fmt.Fprintf(w, `data: {"id":"cmpl-1","object":"text_completion","created":0,"model":"test/model","choices":[],"usage":{"prompt_tokens":8,"total_tokens":%d,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", 8+i, i)
		}
		if rc.perWrite > 1 && i%rc.perWrite != 0 && i != q.MaxTokens {
			continue // written with the next ones
		}
		fl.Flush()
		last = time.Now()
		sent = append(sent, int64(last.Sub(t0)))
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, recRequest{Sent: sent})
	rc.mu.Unlock()
}

// serveRecorder is the child's main: it serves until stdin closes.
func serveRecorder() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	go func() { _ = http.Serve(ln, &recorder{}) }()
	fmt.Println("http://" + ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// childRecorder starts the recording server in a child process and returns
// its URL.
func childRecorder(tb testing.TB) string {
	tb.Helper()
	return childServer(tb, "recording server", "PROFDECK_REC_CHILD=1")
}

// serverFigures are the server's own medians (as the sweep takes them) over
// the requests it served since the last call, in milliseconds: TTFT (arrival to the first chunk's
// write), TPOT ((last − first) / (n − 1)) and ITL (every gap between
// consecutive chunks).
type serverFigures struct {
	n               int
	ttft, tpot, itl float64
}

func recorded(tb testing.TB, url string) serverFigures {
	tb.Helper()
	resp, err := http.Get(url + "/records")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var reqs []recRequest
	if err := json.NewDecoder(resp.Body).Decode(&reqs); err != nil {
		tb.Fatal(err)
	}
	var ttft, tpot, itl []float64
	for _, r := range reqs {
		k := len(r.Sent)
		if k < 2 {
			continue
		}
		ttft = append(ttft, float64(r.Sent[0])/1e6)
		tpot = append(tpot, float64(r.Sent[k-1]-r.Sent[0])/1e6/float64(k-1))
		for i := 1; i < k; i++ {
			itl = append(itl, float64(r.Sent[i]-r.Sent[i-1])/1e6)
		}
	}
	return serverFigures{n: len(reqs), ttft: median(ttft), tpot: median(tpot), itl: median(itl)}
}

// median is the sweep's median: the value at rank ⌈n/2⌉ (HdrHistogram's
// ValueAtQuantile(50)), so both sides are taken alike; with 40 requests
// spread over a loaded machine the mean of the two middle ones can differ
// from it by over 1%.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[(len(v)+1)/2-1]
}
