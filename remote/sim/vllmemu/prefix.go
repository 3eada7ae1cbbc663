package vllmemu

import (
	"encoding/json"
	"hash/fnv"
	"strings"
	"sync"
)

// prefixBlock is how many prompt tokens one cache block holds (vLLM's
// default block size): the prefix cache hits whole blocks only.
const prefixBlock = 16

// maxPrefixBlocks bounds the cache; past it, it starts empty again (as a
// full cache evicts).
const maxPrefixBlocks = 1 << 16

// prefixCache is the emulator's automatic prefix cache: a block is cached
// once a prompt holding it (and everything before it) was seen. It counts
// the tokens queried and hit, as vLLM's prefix_cache_queries and
// prefix_cache_hits counters do.
type prefixCache struct {
	mu            sync.Mutex
	blocks        map[uint64]bool
	queries, hits int64
}

// lookup counts one prompt: its tokens are queried, the tokens of its
// leading blocks already cached are hits, and its blocks are cached.
func (c *prefixCache) lookup(words []string) {
	h := fnv.New64a()
	var hashes []uint64
	var ends []int // tokens up to each block's end
	tokens, inBlock := 0, 0
	for _, w := range words {
		h.Write([]byte(w))
		h.Write([]byte{0})
		n := countTokens(w)
		tokens += n
		inBlock += n
		if inBlock >= prefixBlock {
			hashes = append(hashes, h.Sum64())
			ends = append(ends, tokens)
			inBlock = 0
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blocks == nil || len(c.blocks)+len(hashes) > maxPrefixBlocks {
		c.blocks = map[uint64]bool{}
	}
	c.queries += int64(tokens)
	hit := 0
	for i, k := range hashes {
		if !c.blocks[k] {
			break
		}
		hit = ends[i]
	}
	c.hits += int64(hit)
	for _, k := range hashes {
		c.blocks[k] = true
	}
}

func (c *prefixCache) totals() (queries, hits int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries, c.hits
}

// promptWords are a request's prompt words: a completions prompt (a
// string or strings; token ids have no words) or the chat messages' text.
func promptWords(prompt json.RawMessage, msgs []emuMessage) []string {
	var b strings.Builder
	var s string
	var ss []string
	switch {
	case msgs != nil:
		for _, m := range msgs {
			b.WriteString(m.Role + " ")
			var text string
			if json.Unmarshal(m.Content, &text) == nil {
				b.WriteString(text + " ")
			}
		}
	case json.Unmarshal(prompt, &s) == nil:
		b.WriteString(s)
	case json.Unmarshal(prompt, &ss) == nil:
		b.WriteString(strings.Join(ss, " "))
	}
	return strings.Fields(b.String())
}
