package profile

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/remote/local"
)

// A server that echoes the refused key in its 401 body: the error keeps the
// body, not the key.
func TestEchoedKeyNotInErrors(t *testing.T) {
	const key = "PlantedKey4402"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error": "invalid key %s"}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer srv.Close()
	c := newClient(local.New(), srv.URL, key)
	defer c.close()
	_, err := c.complete(t.Context(), "completions", "m", "hi", 4)
	if err == nil || !strings.Contains(err.Error(), "invalid key") || strings.Contains(err.Error(), key) {
		t.Errorf("complete: %v", err)
	}
	_, body, err := c.status(t.Context(), http.MethodPost, "/start_profile")
	if err != nil || !strings.Contains(body, "invalid key") || strings.Contains(body, key) {
		t.Errorf("status: %q %v", body, err)
	}
}
