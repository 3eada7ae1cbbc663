package profile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// client talks HTTP to the server through the host, so a server bound to
// the host's localhost is reachable over SSH.
type client struct {
	base   string
	apiKey string
	hc     *http.Client
}

func newClient(h remote.Host, base, apiKey string) *client {
	tr := &http.Transport{
		DialContext:         h.DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &client{base: strings.TrimRight(base, "/"), apiKey: apiKey, hc: &http.Client{Transport: tr}}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

func (c *client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return c.hc.Do(req)
}

// status sends a request with an empty body and returns the status code.
func (c *client) status(ctx context.Context, method, path string) (int, string, error) {
	resp, err := c.do(ctx, method, path, nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, c.scrub(b), nil
}

// model returns the first served model id from /v1/models.
func (c *client) model(ctx context.Context) (string, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /v1/models: %s", resp.Status)
	}
	var m struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m); err != nil {
		return "", fmt.Errorf("GET /v1/models: %w", err)
	}
	if len(m.Data) == 0 {
		return "", fmt.Errorf("GET /v1/models: no model served")
	}
	return m.Data[0].ID, nil
}

// complete sends one non-streamed request and returns the completion tokens
// the server's usage reports.
func (c *client) complete(ctx context.Context, api, model, prompt string, maxTokens int) (int, error) {
	path := "/v1/completions"
	body := map[string]any{"model": model, "max_tokens": maxTokens, "temperature": 0, "ignore_eos": true, "stream": false}
	if api == "chat" {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	} else {
		body["prompt"] = prompt
	}
	resp, err := c.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("POST %s: %s: %s", path, resp.Status, c.scrub(b))
	}
	var r struct {
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&r); err != nil {
		return 0, fmt.Errorf("POST %s: %w", path, err)
	}
	if r.Usage == nil {
		return 0, fmt.Errorf("POST %s: the response has no usage", path)
	}
	return r.Usage.CompletionTokens, nil
}

// engineSteps reads the count of vllm:iteration_tokens_total (one
// observation per engine step) from /metrics, summed over engines. ok is
// false when the server does not expose it.
func (c *client) engineSteps(ctx context.Context) (float64, bool) {
	m := c.metrics(ctx)
	return m.steps, m.haveSteps
}

// serverMetrics are the /metrics figures a capture window watches.
type serverMetrics struct {
	steps, running         float64
	haveSteps, haveRunning bool
	// The step mix: the tokens the steps held, prompt and generation
	// tokens (counters, summed over engines).
	stepTokens, prompt, gen float64
	haveMix                 bool
}

// metrics reads the engine steps (the count of vllm:iteration_tokens_total,
// one observation per step) and the running requests
// (vllm:num_requests_running), each summed over engines.
func (c *client) metrics(ctx context.Context) serverMetrics {
	var m serverMetrics
	resp, err := c.do(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var sum *float64
		var have *bool
		var rest string
		switch {
		case strings.HasPrefix(line, "vllm:iteration_tokens_total_count"):
			sum, have, rest = &m.steps, &m.haveSteps, strings.TrimPrefix(line, "vllm:iteration_tokens_total_count")
		case strings.HasPrefix(line, "vllm:num_requests_running"):
			sum, have, rest = &m.running, &m.haveRunning, strings.TrimPrefix(line, "vllm:num_requests_running")
		case strings.HasPrefix(line, "vllm:iteration_tokens_total_sum"):
			sum, have, rest = &m.stepTokens, &m.haveMix, strings.TrimPrefix(line, "vllm:iteration_tokens_total_sum")
		case strings.HasPrefix(line, "vllm:prompt_tokens_total"):
			sum, have, rest = &m.prompt, &m.haveMix, strings.TrimPrefix(line, "vllm:prompt_tokens_total")
		case strings.HasPrefix(line, "vllm:generation_tokens_total"):
			sum, have, rest = &m.gen, &m.haveMix, strings.TrimPrefix(line, "vllm:generation_tokens_total")
		default:
			continue
		}
		if rest == "" || rest[0] != '{' && rest[0] != ' ' {
			continue // another metric with the same prefix
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			*sum += v
			*have = true
		}
	}
	return m
}

// promptOf builds a prompt of about n tokens (one short word a token).
func promptOf(n int) string {
	words := []string{"the", "model", "serves", "tokens", "across", "eight", "GPUs", "while", "we", "measure", "each", "step"}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	return b.String()
}

// scrub is a server's answer, trimmed, with the API key hidden wherever it
// stands (a 401 that echoes it) and what remote.ScrubSecrets finds.
func (c *client) scrub(b []byte) string {
	return remote.ScrubSecrets(strings.TrimSpace(string(b)), c.apiKey)
}
