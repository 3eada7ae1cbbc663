package macro

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote/localfs"
)

// This file reads multi-turn datasets: ShareGPT conversations turn by turn,
// and a JSONL of turns with think times. A session sends each turn with
// the history before it, the server's real answers in it (session.go).

// Multi-turn dataset kinds (--dataset conversations FILE and so on).
const (
	DatasetConversations = "conversations" // a ShareGPT JSON list, every human turn sent
	DatasetSessions      = "sessions"      // JSONL, one turn a line
)

// Bounds on a multi-turn dataset.
const (
	maxSessionTurns = 512
	MaxThinkTime    = time.Hour
)

// IsSessionDataset says whether a --dataset kind runs sessions.
func IsSessionDataset(kind string) bool {
	return kind == DatasetConversations || kind == DatasetSessions
}

// convTurn is one turn of a conversation: the user's message, the output
// length asked (0: the sweep's) and the wait before it (-1: the sweep's
// think time).
type convTurn struct {
	prompt    string
	outputLen int
	think     time.Duration
}

// conversation is one session's turns, with its system prompt.
type conversation struct {
	id     string
	system string
	turns  []convTurn
}

// convSet is a multi-turn dataset as read: conversations in file order,
// their text's size in bytes.
type convSet struct {
	convs []conversation
	bytes int
	keep  int // conversations kept at most
}

// readConvSet reads a multi-turn dataset of kind from path, keeping at
// most keep conversations (0: maxDatasetItems); errors name the file and
// the line.
func readConvSet(kind, path string, keep int) (*convSet, error) {
	f, err := localfs.OpenInput(path)
	if err != nil {
		return nil, fmt.Errorf("--dataset %s %s: %v", kind, path, err)
	}
	defer f.Close()
	return parseConvSet(kind, path, f, keep)
}

// parseConvSet reads a multi-turn dataset of kind from r; name is the
// file's name in errors.
func parseConvSet(kind, name string, r io.Reader, keep int) (*convSet, error) {
	cs := &convSet{keep: maxDatasetItems}
	if keep > 0 {
		cs.keep = min(keep, maxDatasetItems)
	}
	var err error
	if kind == DatasetSessions {
		err = cs.readTurnsJSONL(r, name)
	} else {
		err = cs.readShareGPTTurns(r, name)
	}
	if err != nil {
		return nil, err
	}
	if len(cs.convs) == 0 {
		return nil, fmt.Errorf("%s: no conversation with a user turn in the dataset", name)
	}
	return cs, nil
}

// grow counts n more bytes of text, refused past MaxDatasetBytes.
func (cs *convSet) grow(n int) error {
	if cs.bytes += n; cs.bytes > MaxDatasetBytes {
		return fmt.Errorf("the %d conversations kept so far hold over %d MiB: keep fewer with --dataset-max (macro.dataset_max)", len(cs.convs), MaxDatasetBytes>>20)
	}
	return nil
}

// turnLine is one line of a sessions JSONL: the session it belongs to
// (a string or a number), the user's message, the output length and the
// wait before the turn.
type turnLine struct {
	SessionID   json.RawMessage `json:"session_id"`
	Prompt      *string         `json:"prompt"`
	System      *string         `json:"system"`
	OutputLen   *float64        `json:"output_len"`
	ThinkTimeMs *float64        `json:"think_time_ms"`
}

// readTurnsJSONL reads one turn a line; a session's turns are its lines
// in file order, sessions ordered by their first line.
func (cs *convSet) readTurnsJSONL(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxDatasetLine)
	at := map[string]int{} // session id → index in cs.convs (-1: past keep)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		id, t, system, err := parseTurnLine(line)
		if err == nil {
			err = cs.addTurn(at, id, t, system)
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %v", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s: a line is past %d MiB", name, maxDatasetLine>>20)
		}
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

// addTurn files a turn under its session; the turns of sessions past keep
// are skipped.
func (cs *convSet) addTurn(at map[string]int, id string, t convTurn, system string) error {
	i, ok := at[id]
	if !ok {
		if len(at) >= 4*maxDatasetItems {
			return fmt.Errorf("past %d sessions", 4*maxDatasetItems)
		}
		i = -1
		if len(cs.convs) < cs.keep {
			i = len(cs.convs)
			cs.convs = append(cs.convs, conversation{id: id, system: system})
			if err := cs.grow(len(system)); err != nil {
				return err
			}
		}
		at[id] = i
	}
	if i < 0 {
		return nil
	}
	c := &cs.convs[i]
	if len(c.turns) >= maxSessionTurns {
		return fmt.Errorf("session %q is past %d turns", id, maxSessionTurns)
	}
	c.turns = append(c.turns, t)
	return cs.grow(len(t.prompt))
}

// parseTurnLine reads one sessions JSONL line.
func parseTurnLine(line []byte) (id string, t convTurn, system string, err error) {
	var l turnLine
	if err := json.Unmarshal(line, &l); err != nil {
		return "", t, "", fmt.Errorf("not a JSON object: %v", err)
	}
	if id, err = sessionID(l.SessionID); err != nil {
		return "", t, "", err
	}
	switch {
	case l.Prompt == nil || strings.TrimSpace(*l.Prompt) == "":
		return "", t, "", errors.New(`no "prompt" string`)
	case len(*l.Prompt) > maxPromptBytes:
		return "", t, "", fmt.Errorf("prompt longer than %d bytes", maxPromptBytes)
	case l.System != nil && len(*l.System) > maxPromptBytes:
		return "", t, "", fmt.Errorf("system prompt longer than %d bytes", maxPromptBytes)
	}
	t = convTurn{prompt: *l.Prompt, think: -1}
	if v := l.OutputLen; v != nil {
		if math.IsNaN(*v) || *v != math.Trunc(*v) || *v < 2 || *v > MaxOutputLen {
			return "", t, "", fmt.Errorf(`"output_len" %g: want a whole number from 2 to %d`, *v, MaxOutputLen)
		}
		t.outputLen = int(*v)
	}
	if v := l.ThinkTimeMs; v != nil {
		if math.IsNaN(*v) || *v < 0 || *v > float64(MaxThinkTime/time.Millisecond) {
			return "", t, "", fmt.Errorf(`"think_time_ms" %g: want 0 to %d`, *v, MaxThinkTime/time.Millisecond)
		}
		t.think = time.Duration(*v * float64(time.Millisecond))
	}
	if l.System != nil {
		system = *l.System
	}
	return id, t, system, nil
}

// sessionID is a line's session_id: a string (at most 256 bytes) or a
// whole number.
func sessionID(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" && len(s) <= 256 {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return string(n), nil
		}
	}
	return "", errors.New(`"session_id" must be a string of 1 to 256 bytes or a whole number`)
}

// shareGPTConv is one conversation with its speakers.
type shareGPTConv struct {
	ID            json.RawMessage `json:"id"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// readShareGPTTurns reads a ShareGPT JSON list: each human message is a
// turn, the reply after it gives the turn's output length in words (the
// reply's text is not sent: the server's own answer is), a system message
// before the first turn is the session's system prompt.
func (cs *convSet) readShareGPTTurns(r io.Reader, name string) error {
	cr := &lineCounter{r: bufio.NewReaderSize(r, 64<<10)}
	dec := json.NewDecoder(cr)
	at := func(err error) error {
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off = te.Offset
		}
		return fmt.Errorf("%s:%d: not a ShareGPT JSON list: %v", name, cr.lineAt(off), err)
	}
	tok, err := dec.Token()
	if err != nil {
		return at(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return at(errors.New("want a list of conversations"))
	}
	for n := 0; dec.More(); n++ {
		cr.start = dec.InputOffset()
		var e shareGPTConv
		if err := dec.Decode(&e); err != nil {
			return at(err)
		}
		if len(cs.convs) >= cs.keep {
			continue
		}
		if err := cs.addShareGPT(e, n); err != nil {
			return at(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return at(err)
	}
	return nil
}

// addShareGPT keeps a ShareGPT conversation that has a user turn.
func (cs *convSet) addShareGPT(e shareGPTConv, n int) error {
	c := conversation{id: strconv.Itoa(n + 1)}
	if id, err := sessionID(e.ID); err == nil {
		c.id = id
	}
	size := 0
	for _, m := range e.Conversations {
		switch strings.ToLower(m.From) {
		case "system":
			if len(c.turns) == 0 && len(m.Value) <= maxPromptBytes {
				c.system = m.Value
				size += len(m.Value)
			}
		case "human", "user":
			if strings.TrimSpace(m.Value) == "" || len(m.Value) > maxPromptBytes || len(c.turns) >= maxSessionTurns {
				continue
			}
			c.turns = append(c.turns, convTurn{prompt: m.Value, think: -1})
			size += len(m.Value)
		default: // the model's reply: its length is the turn's output
			if k := len(c.turns); k > 0 && c.turns[k-1].outputLen == 0 {
				c.turns[k-1].outputLen = min(max(len(strings.Fields(m.Value)), 2), MaxOutputLen)
			}
		}
	}
	if len(c.turns) == 0 {
		return nil
	}
	cs.convs = append(cs.convs, c)
	return cs.grow(size)
}
