package macro_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
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
	_, err := macro.NewSweep(macro.Complete(macro.Config{URL: withCreds, Model: "no-such-model", Concurrency: []int{1}, Requests: 1}))
	if err == nil {
		sw, _ := macro.NewSweep(macro.Complete(macro.Config{URL: withCreds, Model: "no-such-model", Concurrency: []int{1}, Requests: 1}))
		_, err = sw.Run(t.Context(), nil)
	}
	if err == nil || strings.Contains(err.Error(), "s3cretpw") {
		t.Fatalf("error %v: want one that does not show the password", err)
	}
}

// A server that echoes the key it refused, in its 401 body: the failure
// examples, the events and the error keep the body without the key (nor
// the URL's password).
func TestEchoedKeyNotRecorded(t *testing.T) {
	const key, pw = "PlantedKey7713", "PlantedPw6620"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		u, p, _ := r.BasicAuth()
		fmt.Fprintf(w, `{"error": "invalid api key %q (header %q, user %s:%s)"}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
			r.Header.Get("Authorization"), u, p)
	}))
	defer srv.Close()
	withCreds := strings.Replace(srv.URL, "http://", "http://bench:"+pw+"@", 1)
	ch := make(chan phases.Event, 4096)
	sw, err := macro.NewSweep(macro.Complete(macro.Config{URL: withCreds, Model: "m", APIKey: key, NoPreflight: true, Concurrency: []int{1}, Requests: 2,
		InputLen: 8, OutputLen: 4}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Run(t.Context(), &phases.Emitter{Out: ch})
	close(ch)
	var all strings.Builder
	for ev := range ch {
		b, _ := json.Marshal(ev)
		all.Write(b)
	}
	if err != nil {
		all.WriteString(err.Error())
	}
	if res != nil {
		b, _ := json.Marshal(res)
		all.Write(b)
	}
	text := all.String()
	if !strings.Contains(text, "invalid api key") {
		t.Fatalf("the server's answer was not kept:\n%s", text)
	}
	for _, s := range []string{key, pw} {
		if strings.Contains(text, s) {
			t.Errorf("%s is recorded:\n%s", s, text)
		}
	}
}
