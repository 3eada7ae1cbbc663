package macro

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestReadConvSets reads the two sample multi-turn files: the sessions
// JSONL's turns grouped by session in file order with their think times
// and system prompt, the ShareGPT list's human turns with the replies'
// lengths as output lengths.
func TestReadConvSets(t *testing.T) {
	cs, err := readConvSet(DatasetSessions, "testdata/sessions.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.convs) != 4 || cs.convs[0].id != "s1" || len(cs.convs[0].turns) != 3 || len(cs.convs[1].turns) != 4 {
		t.Fatalf("sessions %+v", cs.convs)
	}
	s1 := cs.convs[0]
	if s1.system == "" || s1.turns[0].think != -1 || s1.turns[1].think != 75*time.Millisecond || s1.turns[2].outputLen != 40 ||
		!strings.HasPrefix(s1.turns[1].prompt, "Thanks.") {
		t.Fatalf("session s1 %+v", s1)
	}
	cs, err = readConvSet(DatasetConversations, "testdata/conversations.json", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.convs) != 3 || cs.convs[0].system == "" || len(cs.convs[1].turns) != 3 || cs.convs[1].turns[2].outputLen != 40 {
		t.Fatalf("conversations %+v", cs.convs)
	}
}

// TestConvSetBadInput: each malformed file is one line naming the file and
// its line.
func TestConvSetBadInput(t *testing.T) {
	for _, c := range []struct{ kind, body, want string }{
		{DatasetSessions, "{\"session_id\":\"a\",\"prompt\":\"x\"}\n{\"session_id\":\"a\"}\n", `f:2: no "prompt" string`},
		{DatasetSessions, `{"session_id":{},"prompt":"x"}`, `f:1: "session_id" must be`},
		{DatasetSessions, `{"session_id":1,"prompt":"x","output_len":1}`, `f:1: "output_len" 1`},
		{DatasetSessions, `{"session_id":1,"prompt":"x","think_time_ms":-5}`, `f:1: "think_time_ms" -5`},
		{DatasetSessions, "\n\n", "f: no conversation"},
		{DatasetSessions, strings.Repeat(`{"session_id":1,"prompt":"x"}`+"\n", maxSessionTurns+1), "past 512 turns"},
		{DatasetConversations, `[{"conversations":[{"from":"gpt","value":"a"}]}]`, "f: no conversation"},
		{DatasetConversations, "[\n{\"conversations\": 3}]", "f:2: not a ShareGPT JSON list"},
	} {
		_, err := parseConvSet(c.kind, "f", strings.NewReader(c.body), 0)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %.40q: error %v, want %q", c.kind, c.body, err, c.want)
		}
	}
}

// TestConvSetBounded: the text kept is bounded whatever the file's size.
func TestConvSetBounded(t *testing.T) {
	line := `{"session_id":%d,"prompt":"` + strings.Repeat("w ", maxPromptBytes/2-8) + `"}` + "\n"
	var b bytes.Buffer
	for i := 0; b.Len() < MaxDatasetBytes+2*maxPromptBytes; i++ {
		b.WriteString(strings.Replace(line, "%d", string(rune('0'+i%10)), 1))
	}
	_, err := parseConvSet(DatasetSessions, "f", &b, 0)
	if err == nil || !strings.Contains(err.Error(), "--dataset-max") {
		t.Fatalf("error %v", err)
	}
}

// FuzzConvSets: the multi-turn readers never panic, errors are one line,
// and every turn kept has a prompt, an output length of 0 (the sweep's) or
// 2 to MaxOutputLen, and a think time of -1 (the sweep's) or 0 to an hour.
func FuzzConvSets(f *testing.F) {
	for _, s := range []string{`{"session_id":"a","prompt":"x y","output_len":3,"think_time_ms":20}`,
		`[{"id":"c","conversations":[{"from":"system","value":"s"},{"from":"human","value":"a"},{"from":"gpt","value":"b c"}]}]`,
		`{"session_id":1e400,"prompt":"x"}`, `[{"conversations":[{"from":"human","value":1}]}]`, "[", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, kind := range []string{DatasetSessions, DatasetConversations} {
			cs, err := parseConvSet(kind, "f", strings.NewReader(s), 4)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error on two lines: %q", err)
				}
				continue
			}
			for _, c := range cs.convs {
				if len(c.turns) == 0 || len(c.turns) > maxSessionTurns {
					t.Fatalf("%s: %d turns kept", kind, len(c.turns))
				}
				for _, tn := range c.turns {
					if strings.TrimSpace(tn.prompt) == "" || tn.outputLen == 1 || tn.outputLen < 0 || tn.outputLen > MaxOutputLen ||
						tn.think < -1 || tn.think > MaxThinkTime {
						t.Fatalf("%s: turn %+v kept", kind, tn)
					}
				}
			}
		}
	})
}
