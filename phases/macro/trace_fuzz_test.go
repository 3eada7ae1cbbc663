package macro

import (
	"bytes"
	"testing"
)

func FuzzParseTrace(f *testing.F) {
	f.Add(0, []byte(`{"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}`))
	f.Add(1, []byte(`{"chat_id":1,"parent_chat_id":-1,"timestamp":0.5,"input_length":20,"output_length":3,"hash_ids":[4,5]}`))
	f.Add(2, []byte("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5.3,GPT-4,445,107,552,API log\n"))
	f.Add(2, []byte("Timestamp,Request tokens,Response tokens\n\"1,2\n"))
	formats := []string{TraceMooncake, TraceBailian, TraceBurstGPT}
	f.Fuzz(func(t *testing.T, k int, data []byte) {
		format := formats[(k%3+3)%3]
		tr, err := ParseTrace(format, "f", bytes.NewReader(data))
		if err != nil {
			if bytes.ContainsRune([]byte(err.Error()), '\n') {
				t.Fatalf("error on two lines: %q", err)
			}
			return
		}
		if len(tr.Requests) == 0 || tr.Requests[0].At != 0 {
			t.Fatal("a trace without requests, or not starting at 0")
		}
		_ = ImpliedReuse(tr.Requests, max(tr.BlockSize, 1), CacheBlock)
	})
}
