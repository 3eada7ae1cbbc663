package defaultstest_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/defaultstest"
)

type kind string

type config struct {
	Name  string
	Kind  kind
	Sizes []int
	Wait  time.Duration
	Other int
}

var table = struct {
	Name  string
	Kind  string
	Sizes []int
	Wait  time.Duration
}{Name: "n", Kind: "k", Sizes: []int{1, 2}, Wait: time.Second}

func TestFillSetsWhatIsUnsetAndKeepsWhatIsGiven(t *testing.T) {
	var c config
	defaultstest.Fill(&c, table)
	want := config{Name: "n", Kind: "k", Sizes: []int{1, 2}, Wait: time.Second}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("zero config filled: %+v, want %+v", c, want)
	}
	c.Sizes[0] = 9 // the table's list is the test's own copy
	if table.Sizes[0] != 1 {
		t.Fatalf("a filled list shares the table's: %v", table.Sizes)
	}
	given := config{Name: "x", Kind: "bad", Sizes: []int{}, Wait: -1, Other: 3}
	defaultstest.Fill(&given, table)
	want = config{Name: "x", Kind: "bad", Sizes: []int{1, 2}, Wait: -1, Other: 3}
	if !reflect.DeepEqual(given, want) {
		t.Fatalf("given values: %+v, want %+v (an empty list is unset)", given, want)
	}
}

func TestDifferencesNameEachFieldOutOfStep(t *testing.T) {
	same := config{Name: "n", Kind: "k", Sizes: []int{1, 2}, Wait: time.Second, Other: 7}
	if d := defaultstest.Differences(same, table); d != nil {
		t.Fatalf("same values: %q", d)
	}
	if d := defaultstest.Differences(&same, table); d != nil {
		t.Fatalf("same values through a pointer: %q", d)
	}
	off := config{Name: "n", Kind: "k2", Sizes: []int{1, 2, 4}, Wait: time.Second}
	d := defaultstest.Differences(off, table)
	if len(d) != 2 || !slices.ContainsFunc(d, func(s string) bool { return s == "Kind: the configuration has k2, the test table k" }) ||
		!slices.ContainsFunc(d, func(s string) bool { return s == "Sizes: the configuration has [1 2 4], the test table [1 2]" }) {
		t.Fatalf("differences: %q", d)
	}
	lacking := struct{ Name string }{"n"}
	if d := defaultstest.Differences(lacking, table); len(d) != 3 {
		t.Fatalf("a configuration lacking 3 fields: %q", d)
	}
}

func TestFillRefusesATableOutOfStep(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a table naming a field the configuration lacks filled silently")
		}
	}()
	var c struct{ Name string }
	defaultstest.Fill(&c, table)
}
