package sim

import (
	"fmt"
	"net/http"
	"time"
)

// metricsSnap is the part of the emulator's state that the server's
// periodic stats line and the GPU utilisation are built from.
type metricsSnap struct {
	ok               bool
	running, waiting float64
	kvUsage          float64 // 0..1
	promptTokens     float64 // totals
	genTokens        float64
}

// scrapeMetrics reads the emulator's live state.
func (d *Deployment) scrapeMetrics() metricsSnap {
	st := d.emu.State()
	return metricsSnap{ok: true, running: float64(st.Running), waiting: float64(st.Waiting),
		kvUsage: st.KVCacheUsage, promptTokens: float64(st.PromptTokens), genTokens: float64(st.GenerationTokens)}
}

// serveUtil is GPU utilisation while serving: busy when requests run.
func (d *Deployment) serveUtil() float64 {
	m := d.scrapeMetrics()
	if m.running <= 0 {
		return 0
	}
	return min(99, 70+m.running/2+d.rng.Float64()*8)
}

// statsLocked writes vLLM's periodic "Engine 000: Avg prompt throughput"
// line while the server is busy (vLLM logs it at DEBUG when idle, so it is
// absent then), plus one line when it goes idle.
func (d *Deployment) statsLocked(s *serverProc, now time.Time) {
	if s.statsAt.IsZero() {
		s.statsAt = now
		s.statsPrev = d.scrapeMetrics()
		return
	}
	dt := now.Sub(s.statsAt).Seconds()
	if dt < d.opt.StatsInterval.Seconds() {
		return
	}
	m := d.scrapeMetrics()
	if !m.ok {
		return
	}
	prompt := max(0, m.promptTokens-s.statsPrev.promptTokens) / dt
	gen := max(0, m.genTokens-s.statsPrev.genTokens) / dt
	busy := m.running > 0 || m.waiting > 0 || prompt > 0 || gen > 0
	if busy || s.statsBusy {
		hit := 0.0 // the emulator has no prefix cache
		if d.sglang() {
			d.logLocked(s, slogLocked("TP0", fmt.Sprintf("Decode batch. #running-req: %d, #token: %d, token usage: %.2f, "+
				"gen throughput (token/s): %.2f, #queue-req: %d", int(m.running), int(m.kvUsage*float64(d.emu.Config().KVCacheTokens)),
				m.kvUsage, gen, int(m.waiting))))
			s.statsBusy = busy
			s.statsAt, s.statsPrev = now, m
			return
		}
		msg := fmt.Sprintf("Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, "+
			"Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%",
			prompt, gen, int(m.running), int(m.waiting), 100*m.kvUsage, hit)
		d.logLocked(s, d.vlogLocked(s, "APIServer", "INFO", "loggers.py:271", msg))
	}
	s.statsBusy = busy
	s.statsAt, s.statsPrev = now, m
}

// accessLog writes uvicorn's access log line for every request, as vLLM's
// API server does.
func (d *Deployment) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rw, r)
		d.mu.Lock()
		defer d.mu.Unlock()
		s := d.server
		if s == nil || !s.running {
			return
		}
		uri := r.URL.RequestURI()
		if d.sglang() {
			d.logLocked(s, slogLocked("", fmt.Sprintf(`INFO:     %s - "%s %s HTTP/%d.%d" %d %s`,
				r.RemoteAddr, r.Method, uri, r.ProtoMajor, r.ProtoMinor, rw.status, http.StatusText(rw.status))))
			return
		}
		d.logLocked(s, fmt.Sprintf(`(APIServer pid=%d) INFO:     %s - "%s %s HTTP/%d.%d" %d %s`,
			s.pid, r.RemoteAddr, r.Method, uri, r.ProtoMajor, r.ProtoMinor, rw.status, http.StatusText(rw.status)))
	})
}

// statusWriter records the status code and passes flushes through, so
// streamed (SSE) responses still stream.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
