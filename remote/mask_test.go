package remote

import "testing"

func TestMaskURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://bench:s3cret@127.0.0.1:8000":                                  "http://xxxxx@127.0.0.1:8000",
		"https://tok_abc@host/v1":                                             "https://xxxxx@host/v1",
		`GET http://u:p%40ss@h:1/health: dial tcp: refused; "http://a:b@c/x"`: `GET http://xxxxx@h:1/health: dial tcp: refused; "http://xxxxx@c/x"`,
		"http://127.0.0.1:8000/health":                                        "http://127.0.0.1:8000/health",
		"ssh gpu@host1 and mail me@example.com":                               "ssh gpu@host1 and mail me@example.com",
		"http://host/path?next=a@b":                                           "http://host/path?next=a@b",
		"":                                                                    "",
	} {
		if got := MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
}
