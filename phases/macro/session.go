package macro

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// This file runs multi-turn sessions: a level's users each take a
// conversation, send its turns one by one with the history before them
// (the server's real answers in it, never the dataset's), wait their think
// time between an answer and the next turn, and take the next
// conversation when one ends.

// maxHistoryBytes bounds one session's history: a session whose next
// turn would pass it ends there, counted with the context-ended ones.
const maxHistoryBytes = 8 << 20

// convFeed hands conversations to users in a seeded order, across the
// sweep's levels; the dispatcher's goroutine uses it.
type convFeed struct {
	set    *convSet
	order  []int
	next   int
	seq    int    // sessions started in the sweep
	prefix string // the session ids' prefix, from the seed
	think  time.Duration
	chat   bool
	maxLen int // the model's context in tokens (0: not known)
	// shard of shards: the sessions this agent starts (Config.Shard).
	shard, shards int
}

func newConvFeed(cfg Config, set *convSet) *convFeed {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc0417))
	return &convFeed{set: set, order: rng.Perm(len(set.convs)), prefix: fmt.Sprintf("%08x", uint32(cfg.Seed)),
		think: cfg.ThinkTime, chat: cfg.API == APIChat, shard: cfg.Shard, shards: cfg.Shards}
}

// convUser is one user of a level: the conversation under way, its next
// turn, the history sent so far and when the next turn may leave.
type convUser struct {
	id      int
	conv    *conversation
	turn    int
	session string
	history []chatMsg
	bytes   int
	words   int
	tokens  int       // the history's tokens as the server counted the last turn (0: not known)
	started time.Time // the session's first send
	due     time.Time
	busy    bool // a turn in flight
}

// turnReq is one turn as the level sends it.
type turnReq struct {
	user    int
	session string
	turn    int // from 1
	prompt  string
	msgs    []chatMsg
	in, out int
}

// begin gives u the next conversation; its first turn leaves after that
// turn's think time from now (at once when first is set: a level's start).
func (f *convFeed) begin(u *convUser, now time.Time, first bool) {
	for {
		u.conv = &f.set.convs[f.order[f.next]]
		f.next = (f.next + 1) % len(f.order)
		f.seq++
		if f.shards < 2 || (f.seq-1)%f.shards == f.shard {
			break // this agent's session (Config.Shard)
		}
	}
	u.turn, u.session, u.bytes, u.words, u.tokens = 0, fmt.Sprintf("%s-%d", f.prefix, f.seq), 0, 0, 0
	u.history = u.history[:0]
	if u.conv.system != "" {
		u.history = append(u.history, chatMsg{Role: "system", Content: u.conv.system})
		u.bytes, u.words = len(u.conv.system), len(strings.Fields(u.conv.system))
	}
	u.due = now
	if !first {
		u.due = now.Add(f.thinkBefore(u))
	}
}

// thinkBefore is the wait before u's next turn: the turn's own, else the
// sweep's think time.
func (f *convFeed) thinkBefore(u *convUser) time.Duration {
	if t := u.conv.turns[u.turn].think; t >= 0 {
		return t
	}
	return f.think
}

// request builds u's next turn with tokensPerWord from the calibration;
// ok is false when its history would not fit the model's context or
// maxHistoryBytes (the session ends there).
func (f *convFeed) request(u *convUser, tokensPerWord float64, outputLen int) (turnReq, bool) {
	t := u.conv.turns[u.turn]
	out := t.outputLen
	if out == 0 {
		out = outputLen
	}
	in := u.promptTokens(t.prompt, tokensPerWord)
	if u.bytes+len(t.prompt) > maxHistoryBytes || (f.maxLen > 0 && in+out > f.maxLen) {
		return turnReq{}, false
	}
	r := turnReq{user: u.id, session: u.session, turn: u.turn + 1, in: in, out: out}
	msgs := append(u.history, chatMsg{Role: "user", Content: t.prompt})
	if f.chat {
		r.msgs = msgs
		return r, true
	}
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Content)
	}
	r.prompt = b.String()
	return r, true
}

// answered takes u's turn that ended: a completed one adds the prompt and
// the server's answer to the history and moves to the next turn; it
// returns whether the session is over (its last turn answered, or the
// turn failed).
func (f *convFeed) answered(u *convUser, rec *Record) (over bool) {
	if !rec.Completed() {
		return true
	}
	t := u.conv.turns[u.turn]
	u.history = append(u.history, chatMsg{Role: "user", Content: t.prompt}, chatMsg{Role: "assistant", Content: rec.answer})
	u.bytes += len(t.prompt) + len(rec.answer)
	u.words += len(strings.Fields(t.prompt)) + len(strings.Fields(rec.answer))
	u.tokens = 0
	if rec.promptUsage && rec.TokenSource != SourceChunks {
		u.tokens = rec.InputTokens + rec.OutputTokens + msgTokens
	}
	u.turn++
	return u.turn >= len(u.conv.turns)
}

// checkFits refuses a multi-turn dataset none of whose conversations has
// a first turn that fits the model's context of maxLen tokens (0: not
// known): its users could send nothing (nil-safe).
func (f *convFeed) checkFits(cfg Config, maxLen int, tokensPerWord float64) error {
	if f == nil || maxLen <= 0 {
		return nil
	}
	probe := &convFeed{set: f.set, chat: f.chat, maxLen: maxLen}
	for i := range f.set.convs {
		u := &convUser{conv: &f.set.convs[i]}
		u.bytes, u.words = len(u.conv.system), len(strings.Fields(u.conv.system))
		if _, ok := probe.request(u, tokensPerWord, cfg.OutputLen); ok {
			return nil
		}
	}
	return &phases.InputError{Err: fmt.Errorf("--dataset %s %s: no conversation's first turn fits the model's context of %d tokens (max_model_len)",
		cfg.Dataset, cfg.DatasetFile, maxLen)}
}

// msgTokens are the tokens a chat template may add around one message:
// the history's estimate counts them, so that a turn that would pass the
// model's context is not sent.
const msgTokens = 8

// promptTokens estimates u's next prompt with the user's message: the
// history as the server counted it at the last turn (its prompt and
// answer) when known, else its words, and the message's words, by the
// calibration's tokens per word, each message with msgTokens.
func (u *convUser) promptTokens(prompt string, tokensPerWord float64) int {
	words := len(strings.Fields(prompt))
	if u.tokens > 0 {
		return u.tokens + int(float64(words)*tokensPerWord+0.5) + msgTokens
	}
	msgs := len(u.history) + 1
	return max(int(float64(u.words+words)*tokensPerWord+0.5)+msgs*msgTokens, 1)
}
