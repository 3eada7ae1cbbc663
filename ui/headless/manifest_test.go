package headless_test

import (
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/profdeck/profdeck/ui/headless"
)

// manifestCampaign is a campaign whose server the pods reach by name.
const manifestCampaign = `server:
  url: http://vllm.bench.svc:8000/v1
  api_key_env: BENCH_KEY
macro:
  concurrency: [16, 64]
  requests: 200
`

// manifestArgs are the flags the command needs besides the campaign.
var manifestArgs = []string{"manifest", "--agents", "3", "--image", "reg.example/profdeck:1", "--coordinator", "10.0.0.5:7070"}

// jobOf is the Job document of a manifest, decoded strictly by the
// Kubernetes API's type.
func jobOf(t *testing.T, manifest string) batchv1.Job {
	t.Helper()
	docs := strings.Split(manifest, "\n---\n")
	var job batchv1.Job
	if err := sigsyaml.UnmarshalStrict([]byte(docs[len(docs)-1]), &job); err != nil {
		t.Fatalf("%v\n%s", err, manifest)
	}
	return job
}

func TestManifestFromTheCampaign(t *testing.T) {
	camp := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, camp, manifestCampaign)
	t.Setenv("BENCH_KEY", "sk-bench-never-printed")
	code, out, errs := runCLI(t, headless.LoadgenMain, append(append([]string{}, manifestArgs...), "-c", camp, "--api-key-secret", "bench/token")...)
	if code != headless.ExitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	job := jobOf(t, out)
	if *job.Spec.Completions != 3 || *job.Spec.Parallelism != 3 || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completions %d, parallelism %d, mode %s", *job.Spec.Completions, *job.Spec.Parallelism, *job.Spec.CompletionMode)
	}
	for _, want := range []string{`"url": "http://vllm.bench.svc:8000/v1"`, "16,\n        64", `"requests": 200`, "name: BENCH_KEY", "name: bench\n", "key: token"} {
		if !strings.Contains(out, want) {
			t.Errorf("the manifest lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errs, "sk-bench-never-printed") {
		t.Error("the API key is printed")
	}
	// Without a Secret, the pods send no key, and that is said once.
	code, out, errs = runCLI(t, headless.LoadgenMain, append(append([]string{}, manifestArgs...), "-c", camp)...)
	if code != headless.ExitOK || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "$BENCH_KEY is set here, but without --api-key-secret") ||
		strings.Contains(out, "BENCH_KEY") || strings.Contains(out+errs, "sk-bench-never-printed") {
		t.Errorf("no Secret: exit %d, stderr %q", code, errs)
	}
}

// Bad input is exit 2 and one line naming it, with nothing on stdout.
func TestManifestBadInput(t *testing.T) {
	dir := t.TempDir()
	camp, bad, data := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "data.yaml")
	writeFile(t, camp, manifestCampaign)
	writeFile(t, bad, "macro:\n  concurency: [1]\n")
	writeFile(t, filepath.Join(dir, "p.jsonl"), `{"prompt": "hi"}`+"\n")
	writeFile(t, data, manifestCampaign+"  dataset: jsonl\n  dataset_file: "+filepath.Join(dir, "p.jsonl")+"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "profdeck loadgen: want the subcommand manifest, got nothing"},
		{[]string{"manfest"}, `profdeck loadgen: want the subcommand manifest, got "manfest"`},
		{[]string{"manifest", "-c", camp, "--image", "i", "--coordinator", "c:1"}, "profdeck loadgen manifest: no agents: give --agents N"},
		{append(append([]string{}, manifestArgs...), "-c", bad), "concurency"},
		{manifestArgs, "server.url http://127.0.0.1:8000: a loopback address is the pod itself"},
		{append(append([]string{}, manifestArgs...), "--url", "http://[::1]:8000"), "--url http://[::1]:8000: a loopback address"},
		{append(append([]string{}, manifestArgs...), "-c", data), "macro.dataset_file " + filepath.Join(dir, "p.jsonl") + ": a file here does not reach the pods"},
		{append(append([]string{}, manifestArgs...), "-c", camp, "stray"), `unexpected argument "stray"`},
		{append(append([]string{}, manifestArgs...), "-c", camp, "--cpu", "2 cores"), `--cpu: want a Kubernetes quantity such as 2, 500m or 4Gi, got "2 cores"`},
	} {
		code, out, errs := runCLI(t, headless.LoadgenMain, tc.args...)
		if code != headless.ExitBadInput || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stdout %d bytes, stderr %q; want exit 2 and one line with %q", tc.args, code, len(out), errs, tc.want)
		}
	}
	for _, args := range [][]string{{"-h"}, {"manifest", "-h"}} {
		if code, out, errs := runCLI(t, headless.LoadgenMain, args...); code != headless.ExitOK || !strings.Contains(out+errs, "usage: profdeck loadgen manifest") {
			t.Errorf("%q: exit %d, %q", args, code, out+errs)
		}
	}
}
