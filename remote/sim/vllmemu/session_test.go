package vllmemu

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chatTurn sends one non-streaming chat request of msgs and returns the
// answer and the prompt tokens the usage said were cached.
func chatTurn(t *testing.T, url string, msgs []map[string]string, maxTok int) (string, int) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "max_tokens": maxTok})
	resp := post(t, url+"/v1/chat/completions", string(b))
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("answer %s: %v", body, err)
	}
	return out.Choices[0].Message.Content, out.Usage.PromptTokensDetails.CachedTokens
}

// TestEmulatorKeepsSessionKV: an answer starts with its own mark, and the
// next turn, which sends the first turn's prompt and answer again, hits
// every whole block of them (the first turn's prompt alone is 2 blocks of
// its 3 with the answer).
func TestEmulatorKeepsSessionKV(t *testing.T) {
	_, url := startTestEmu(t, Config{StepTime: time.Millisecond, CoarseTiming: true})
	var words []string
	for i := range 20 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	turn1 := []map[string]string{{"role": "user", "content": strings.Join(words, " ")}}
	a1, cached1 := chatTurn(t, url, turn1, 20)
	a2, _ := chatTurn(t, url, []map[string]string{{"role": "user", "content": "other"}}, 4)
	mark := regexp.MustCompile(`^ ?` + AnswerMark + ` `)
	if !mark.MatchString(a1) || !mark.MatchString(a2) || strings.Fields(a1)[0] == strings.Fields(a2)[0] {
		t.Fatalf("answers %q and %q: want each its own mark first", a1, a2)
	}
	turn2 := append(turn1, map[string]string{"role": "assistant", "content": a1}, map[string]string{"role": "user", "content": "next question"})
	_, cached2 := chatTurn(t, url, turn2, 4)
	// "user" + 20 words + "assistant" + 20 answer tokens = 42 tokens: two whole blocks.
	if cached1 != 0 || cached2 != 32 {
		t.Fatalf("cached tokens %d then %d; want 0 then 32", cached1, cached2)
	}
}
