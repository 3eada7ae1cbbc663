package fleet

import (
	"reflect"
	"testing"
)

func TestSplitClosedSpreadsTheRemainder(t *testing.T) {
	for _, c := range []struct {
		c, n int
		want []int
	}{{10, 4, []int{3, 3, 2, 2}}, {8, 2, []int{4, 4}}, {3, 4, []int{1, 1, 1, 0}}} {
		got := SplitClosed(c.c, c.n)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitClosed(%d, %d) = %v, want %v", c.c, c.n, got, c.want)
		}
	}
}

func TestSplitRateSumsToTheRate(t *testing.T) {
	sum := 0.0
	for _, r := range SplitRate(25, 4) {
		sum += r
	}
	if sum != 25 {
		t.Fatalf("rates sum to %v", sum)
	}
}

func TestShardKeepsASessionOnOneAgent(t *testing.T) {
	sched := []Arrival{{0, "s1"}, {10, "s2"}, {20, "s1"}, {30, ""}, {40, "s3"}, {50, "s2"}}
	got := Shard(sched, 2)
	want := [][]Arrival{{{0, "s1"}, {20, "s1"}, {30, ""}}, {{10, "s2"}, {40, "s3"}, {50, "s2"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shards %v, want %v", got, want)
	}
}

func TestSlotsOnePerProcess(t *testing.T) {
	got := Slots([]Agent{{"a", 2}, {"b", 1}})
	if !reflect.DeepEqual(got, []string{"a", "a", "b"}) {
		t.Fatalf("slots %v", got)
	}
}
