package gpubench

import (
	"context"
	"reflect"
	"testing"

	"github.com/profdeck/profdeck/phases/model"
)

func TestIntList(t *testing.T) {
	var v IntList
	if err := v.Set(" 1, 8,64 ,"); err != nil || !reflect.DeepEqual([]int(v), []int{1, 8, 64}) {
		t.Errorf("%v %v", v, err)
	}
	for _, bad := range []string{"", "0", "1,-2", "x", "8,8", "2000000"} {
		if err := v.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	l := IntList{1, 8, 64}
	if l.String() != "1,8,64" {
		t.Errorf("String %q", l.String())
	}
}

func TestPlan(t *testing.T) {
	p, err := Plan(context.Background(), nil, "kimi-k2.5", model.Options{TP: 8, Batch: []int{1, 8}})
	if err != nil || p.TP != 8 || !reflect.DeepEqual(p.Batch, []int{1, 8}) || len(p.GEMMs) == 0 {
		t.Errorf("plan %+v: %v", p, err)
	}
	if _, err := Plan(context.Background(), nil, "/nonexistent/config.json", model.Options{TP: 8}); err == nil {
		t.Error("a missing config built a plan")
	}
}
