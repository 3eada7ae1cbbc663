package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/kubejob"
	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// podContainer is what the manifest's Job runs, and the ConfigMap's spec.
type podContainer struct {
	Command, Args []string
	Env           []struct{ Name, Value string }
	Spec          string
}

// manifestPod writes the manifest of n agents and reads its container back.
func manifestPod(t *testing.T, n int) podContainer {
	t.Helper()
	cfg := macro.Config{URL: "http://vllm.serving.svc:8000", Model: "m", Concurrency: []int{4, 16}, Requests: 40,
		InputLen: 64, OutputLen: 16, Timeout: time.Minute}
	var b bytes.Buffer
	if err := kubejob.Write(&b, kubejob.Options{Name: "sweep", Image: "registry.example/profdeck:0.1", Agents: n,
		Coordinator: "10.0.0.5:7070", CPU: "2", Memory: "2Gi", Deadline: time.Hour, Spec: onhost.PodSpec(cfg, "")}); err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(b.String(), "\n---\n")
	var cm struct{ Data map[string]string }
	var job struct {
		Spec struct {
			Template struct {
				Spec struct{ Containers []podContainer }
			}
		}
	}
	if len(docs) != 2 || yaml.Unmarshal([]byte(docs[0]), &cm) != nil || yaml.Unmarshal([]byte(docs[1]), &job) != nil ||
		len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the manifest:\n%s", b.String())
	}
	c := job.Spec.Template.Spec.Containers[0]
	c.Spec = cm.Data[kubejob.SpecFile]
	return c
}

// Every pod of the manifest runs what this program accepts: its command
// is the image's entrypoint (Dockerfile), and its arguments, expanded as
// Kubernetes expands them for its index, pass the agent's own flag set
// with the spec the ConfigMap mounts; each pod says its share.
func TestManifestRunsTheImagesAgent(t *testing.T) {
	const n = 3
	c := manifestPod(t, n)
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"\]`).FindSubmatch(df)
	if len(c.Command) != 1 || entry == nil || path.Base(string(entry[1])) != c.Command[0] || path.Dir(string(entry[1])) != "/usr/local/bin" ||
		!bytes.Contains(df, []byte("CGO_ENABLED=0 go build")) {
		t.Fatalf("the manifest runs %q; the Dockerfile's entrypoint is %q: want one static binary on the PATH, the command's name", c.Command, entry)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, kubejob.SpecFile), []byte(c.Spec), 0o600); err != nil {
		t.Fatal(err)
	}
	var total int
	for i := range n {
		env := map[string]string{kubejob.IndexEnv: fmt.Sprint(i)}
		for _, e := range c.Env {
			if e.Value != "" {
				env[e.Name] = e.Value
			}
		}
		args := []string{}
		for _, a := range c.Args {
			a = os.Expand(strings.NewReplacer("$(", "${", ")", "}").Replace(a), func(k string) string { return env[k] })
			args = append(args, strings.Replace(a, kubejob.SpecDir, dir, 1))
		}
		var out, errb bytes.Buffer
		code := run(context.Background(), append(args, kubejob.FlagCheck), &out, &errb)
		want := fmt.Sprintf("shard %d of %d: levels", i, n)
		if code != 0 || !strings.Contains(out.String(), want) {
			t.Fatalf("pod %d: profdeck %q: exit %d, %q %q: want exit 0 and %q", i, args, code, out.String(), errb.String(), want)
		}
		var reqs int
		fmt.Sscanf(out.String()[strings.Index(out.String(), "], ")+3:], "%d", &reqs)
		total += reqs
	}
	if total != 40 {
		t.Errorf("the pods' shares add up to %d requests, want 40", total)
	}
}

// A pod's agent with a wrong argument is one line naming the flag, exit 2;
// without --check it says that it does not dial the coordinator, exit 1.
func TestPodAgentArguments(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(spec, []byte(manifestPod(t, 2).Spec), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := []string{"--coordinator=10.0.0.5:7070", "--shard=1", "--shards=2", "--spec=" + spec}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{append(ok[:3:3], "--spec=/nonexistent/spec.json"), 2, "--spec: open /nonexistent/spec.json"},
		{append([]string{"--shard=2"}, ok[2:]...), 2, "--coordinator"},
		{append(ok[:1:1], "--shard=2", "--shards=2", ok[3]), 2, "--shard: want 0 to 1, got 2"},
		{append(ok[:4:4], "--colour"), 2, "-colour"},
		{ok, 1, "does not dial 10.0.0.5:7070"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{onhost.AgentCommand}, c.args...), &out, &errb)
		line := strings.TrimSpace(errb.String())
		if code != c.code || !strings.Contains(line, c.want) || strings.Contains(line, "\n") {
			t.Errorf("%q: exit %d, stderr %q: want exit %d and one line with %q", c.args, code, line, c.code, c.want)
		}
	}
}
