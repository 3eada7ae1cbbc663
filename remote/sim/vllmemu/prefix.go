package vllmemu

import (
	"container/list"
	"encoding/json"
	"hash/fnv"
	"strings"
	"sync"
)

// prefixBlock is how many prompt tokens one cache block holds (vLLM's
// default block size): the prefix cache hits whole blocks only.
const prefixBlock = 16

// maxPrefixBlocks bounds the cache's blocks whatever the KV cache's size.
const maxPrefixBlocks = 1 << 18

// prefixCache is the emulator's automatic prefix cache: a block is cached
// once a prompt holding it (and everything before it) was seen, and the
// least recently used blocks are evicted past its capacity (the KV
// cache's blocks). It counts the tokens queried and hit, as vLLM's
// prefix_cache_queries and prefix_cache_hits counters do, and the blocks
// evicted.
type prefixCache struct {
	mu                       sync.Mutex
	capacity                 int // blocks; 0: maxPrefixBlocks
	blocks                   map[uint64]*list.Element
	lru                      list.List // of uint64 hashes, the most recent in front
	queries, hits, evictions int64
}

// newPrefixCache is a cache of the blocks that kvTokens hold.
func newPrefixCache(kvTokens int) *prefixCache {
	return &prefixCache{capacity: min(max(kvTokens/prefixBlock, 1), maxPrefixBlocks)}
}

// lookup counts one prompt: its tokens are queried, the tokens of its
// leading blocks already cached are hits (returned), and its blocks are
// cached.
func (c *prefixCache) lookup(words []string) int {
	hashes, ends, tokens := blockHashes(words)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries += int64(tokens)
	hit := 0
	for i, k := range hashes {
		if c.blocks[k] == nil {
			break
		}
		hit = ends[i]
	}
	c.hits += int64(hit)
	for _, k := range hashes {
		c.keep(k)
	}
	return hit
}

// store caches the blocks of a finished request's prompt and answer (a
// session's KV: its next turn, which sends them again as its history,
// hits them) without counting a query.
func (c *prefixCache) store(words []string) {
	hashes, _, _ := blockHashes(words)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range hashes {
		c.keep(k)
	}
}

// blockHashes are the hashes of words' whole blocks (each hash covers the
// words from the start), the tokens up to each block's end, and the
// tokens in all.
func blockHashes(words []string) (hashes []uint64, ends []int, tokens int) {
	h := fnv.New64a()
	inBlock := 0
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
	return hashes, ends, tokens
}

// keep caches a block, or marks it used, evicting the least recently used
// past the capacity.
func (c *prefixCache) keep(k uint64) {
	if c.blocks == nil {
		c.blocks = map[uint64]*list.Element{}
	}
	if el := c.blocks[k]; el != nil {
		c.lru.MoveToFront(el)
		return
	}
	c.blocks[k] = c.lru.PushFront(k)
	capacity := c.capacity
	if capacity <= 0 {
		capacity = maxPrefixBlocks
	}
	for c.lru.Len() > capacity {
		old := c.lru.Back()
		delete(c.blocks, old.Value.(uint64))
		c.lru.Remove(old)
		c.evictions++
	}
}

func (c *prefixCache) totals() (queries, hits int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries, c.hits
}

// evicted is the number of blocks evicted.
func (c *prefixCache) evicted() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictions
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
