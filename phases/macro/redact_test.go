package macro_test

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// A password in --url is used for the requests but never recorded or shown.
func TestURLPasswordNotRecorded(t *testing.T) {
	_, base := startEmu(t, vllmemu.Config{})
	withCreds := strings.Replace(base, "http://", "http://bench:s3cretpw@", 1)
	res := runSweep(t, macro.Config{URL: withCreds, Concurrency: []int{1}, Requests: 1, OutputLen: 4, InputLen: 8})
	if strings.Contains(res.URL, "s3cretpw") {
		t.Fatalf("result URL %q holds the password", res.URL)
	}
	if res.Levels[0].Completed < 1 || res.Levels[0].Failed != 0 {
		t.Fatalf("completed %d, failed %d: the requests did not go through", res.Levels[0].Completed, res.Levels[0].Failed)
	}
	_, err := macro.NewSweep(macro.Config{URL: withCreds, Model: "no-such-model", Concurrency: []int{1}, Requests: 1})
	if err == nil {
		sw, _ := macro.NewSweep(macro.Config{URL: withCreds, Model: "no-such-model", Concurrency: []int{1}, Requests: 1})
		_, err = sw.Run(t.Context(), nil)
	}
	if err == nil || strings.Contains(err.Error(), "s3cretpw") {
		t.Fatalf("error %v: want one that does not show the password", err)
	}
}
