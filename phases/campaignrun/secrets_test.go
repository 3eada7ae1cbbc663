package campaignrun_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote/local"
)

// A server already up, its URL with a password: the serve step says so
// with the URL masked, in its result and in its event.
func TestAlreadyServingMasksThePassword(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	health := strings.Replace(srv.URL, "http://", "http://alice:PlantedPw3390@", 1) + "/health"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := local.New()
	events := make(chan phases.Event, 4096)
	res, err := campaignrun.Run(ctx, campaignrun.Config{Host: h, Server: &load.Server{Host: h, StopTimeout: time.Minute, ReleasedBelowGiB: 2, Settings: load.Settings{Launch: "false", Log: "/tmp/pd-secrets-test.log"}},
		Phases: []string{phases.Load}, Leave: campaignrun.LeaveServing, Watch: load.Config{HealthURL: health, LogPath: "/tmp/pd-secrets-test.log", StallAfter: time.Minute,
			Poll: time.Second, SnapshotEvery: 10 * time.Second, NoDiagnosis: true}}, &phases.Emitter{Out: events})
	if err != nil {
		t.Fatal(err)
	}
	serve := res.Steps[0]
	if serve.State != phases.StepDone || !strings.HasPrefix(serve.Reason, "already serving: GET http://xxxxx@") {
		t.Fatalf("serve: %+v", serve)
	}
	for len(events) > 0 {
		ev := <-events
		if d, ok := ev.Data.(phases.RunStep); ok && strings.Contains(d.Reason, "PlantedPw3390") {
			t.Errorf("step event shows the password: %+v", d)
		}
	}
	if strings.Contains(serve.Reason, "PlantedPw3390") {
		t.Errorf("reason shows the password: %s", serve.Reason)
	}
}
