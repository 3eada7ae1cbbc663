package kubejob

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// testOptions are four agents against a server with an API key in a Secret.
func testOptions() Options {
	cfg := macro.Config{URL: "http://vllm.serving.svc:8000", Model: "m", Concurrency: []int{8, 32}, Requests: 64,
		InputLen: 512, OutputLen: 128, Warmup: 4, Timeout: 5 * time.Minute, APIKey: "sk-never-in-the-manifest",
		ServerLog: "/var/log/vllm/server.log"}
	return Options{Name: "sweep-a", Namespace: "bench", Image: "registry.example/profdeck:0.1", Agents: 4,
		Coordinator: "10.0.0.5:7070", CPU: "2", Memory: "2Gi", Deadline: 90 * time.Minute,
		APIKeyEnv: "OPENAI_API_KEY", APIKeySecret: "vllm-api", APIKeySecretKey: "key",
		Spec: onhost.PodSpec(cfg, "http://vllm.serving.svc:8000/metrics")}
}

// decoded is the manifest as the Kubernetes API's types read it.
type decoded struct {
	cm  corev1.ConfigMap
	job batchv1.Job
}

// decodeStrict reads the manifest's documents with the API's types,
// refusing any field they do not have.
func decodeStrict(text []byte) (decoded, error) {
	var d decoded
	docs := strings.Split(string(text), "\n---\n")
	if len(docs) != 2 {
		return d, fmt.Errorf("%d documents, want 2 (ConfigMap, Job)", len(docs))
	}
	for _, doc := range docs {
		var tm metav1.TypeMeta
		if err := sigsyaml.Unmarshal([]byte(doc), &tm); err != nil {
			return d, err
		}
		var into any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			into = &d.cm
		case "batch/v1 Job":
			into = &d.job
		default:
			return d, fmt.Errorf("unexpected object %s %s", tm.APIVersion, tm.Kind)
		}
		if err := sigsyaml.UnmarshalStrict([]byte(doc), into); err != nil {
			return d, fmt.Errorf("%s: %w", tm.Kind, err)
		}
	}
	return d, nil
}

func write(t *testing.T, o Options) decoded {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, o); err != nil {
		t.Fatal(err)
	}
	d, err := decodeStrict(b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return d
}

func TestManifestIsAnIndexedJob(t *testing.T) {
	o := testOptions()
	d := write(t, o)
	s := d.job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || *s.Completions != 4 || s.Parallelism == nil || *s.Parallelism != 4 {
		t.Errorf("completions %v, parallelism %v: want 4 each (every agent at once)", s.Completions, s.Parallelism)
	}
	// A lost pod is not retried (a partial level), and the others go on:
	// a Job-wide backoffLimit reached would stop them all.
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 || s.BackoffLimit != nil || s.MaxFailedIndexes != nil {
		t.Errorf("backoffLimitPerIndex %v, backoffLimit %v, maxFailedIndexes %v: want 0 per index, no other limit",
			s.BackoffLimitPerIndex, s.BackoffLimit, s.MaxFailedIndexes)
	}
	if s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != 5400 {
		t.Errorf("activeDeadlineSeconds %v, want 5400", s.ActiveDeadlineSeconds)
	}
	if s.TTLSecondsAfterFinished == nil || *s.TTLSecondsAfterFinished != TTLAfterFinished {
		t.Errorf("ttlSecondsAfterFinished %v", s.TTLSecondsAfterFinished)
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Image != o.Image {
		t.Fatalf("containers %+v, want one of image %s", pod.Containers, o.Image)
	}
	if d.job.Name != "sweep-a" || d.job.Namespace != "bench" || d.cm.Name != "sweep-a-spec" || d.cm.Namespace != "bench" {
		t.Errorf("names %s/%s and %s/%s", d.job.Namespace, d.job.Name, d.cm.Namespace, d.cm.Name)
	}
	sel := pod.TopologySpreadConstraints[0].LabelSelector.MatchLabels
	for k, v := range sel {
		if s.Template.Labels[k] != v {
			t.Errorf("the spread's selector %s=%s does not select the Job's own pods (%v)", k, v, s.Template.Labels)
		}
	}
}

func TestManifestResources(t *testing.T) {
	o := testOptions()
	o.CPU, o.Memory = "1500m", "3Gi"
	c := write(t, o).job.Spec.Template.Spec.Containers[0]
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if cpu := rl[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1.5")) != 0 {
			t.Errorf("cpu %s, want 1.5", cpu.String())
		}
		if mem := rl[corev1.ResourceMemory]; mem.Value() != 3<<30 {
			t.Errorf("memory %d bytes, want 3 GiB", mem.Value())
		}
	}
}

// expand is Kubernetes' $(VAR) expansion of a container's arguments.
func expand(arg string, env map[string]string) string {
	return regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(arg, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// podEnv is the container's environment as the pod with completion index
// i sees it: the annotation Kubernetes writes gives the index; a Secret's
// value is the placeholder secret:NAME/KEY.
func podEnv(t *testing.T, c corev1.Container, i int) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			if e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
				t.Errorf("%s from %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = strconv.Itoa(i)
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return env
}

func TestEveryPodTakesItsShardFromItsIndex(t *testing.T) {
	o := testOptions()
	d := write(t, o)
	c := d.job.Spec.Template.Spec.Containers[0]
	seen, seeds := map[string]bool{}, map[int64]bool{}
	levels, requests := make([]int, len(o.Spec.Concurrency)), 0
	for i := range o.Agents {
		env := podEnv(t, c, i)
		var args []string
		for _, a := range c.Args {
			args = append(args, expand(a, env))
		}
		got := strings.Join(append(append([]string{}, c.Command...), args...), " ")
		want := fmt.Sprintf("profdeck loadgen-agent --coordinator=10.0.0.5:7070 --shard=%d --shards=4 --spec=/etc/profdeck/spec.json", i)
		if got != want {
			t.Errorf("pod %d runs %q, want %q", i, got, want)
		}
		seen[got] = true
		share := podShare(t, d.cm.Data[SpecFile], args)
		for l, c := range share.Concurrency {
			levels[l] += c
		}
		requests += share.Requests
		seeds[share.Seed] = true
		if env["OPENAI_API_KEY"] != "secret:vllm-api/key" {
			t.Errorf("pod %d: API key from %q, want the Secret vllm-api's key", i, env["OPENAI_API_KEY"])
		}
	}
	if len(seen) != o.Agents || len(seeds) != o.Agents {
		t.Errorf("%d distinct pods and %d seeds for %d agents", len(seen), len(seeds), o.Agents)
	}
	if fmt.Sprint(levels) != fmt.Sprint(o.Spec.Concurrency) || requests != o.Spec.Requests {
		t.Errorf("the pods' shares add up to levels %v and %d requests, want %v and %d", levels, requests, o.Spec.Concurrency, o.Spec.Requests)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range d.job.Spec.Template.Spec.Volumes {
			mounted = mounted || m.Name == v.Name && v.ConfigMap != nil && v.ConfigMap.Name == d.cm.Name && m.MountPath == SpecDir
		}
	}
	if !mounted {
		t.Errorf("the ConfigMap %s is not mounted at %s", d.cm.Name, SpecDir)
	}
}

// podShare is the share a pod run with args takes of the spec it mounts.
func podShare(t *testing.T, spec string, args []string) onhost.Spec {
	t.Helper()
	flags := map[string]int{}
	for _, a := range args {
		name, v, _ := strings.Cut(a, "=")
		if n, err := strconv.Atoi(v); err == nil {
			flags[name] = n
		}
	}
	var s onhost.Spec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatal(err)
	}
	share, err := Share(s, flags[FlagShard], flags[FlagShards])
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return share
}

func TestShare(t *testing.T) {
	spec := onhost.Spec{Concurrency: []int{1, 10}, Requests: 30, Warmup: 2, Seed: 7, MetricsURL: "http://s/metrics"}
	var got, scrapes []string
	for i := range 4 {
		s, err := Share(spec, i, 4)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(s.Concurrency, s.Requests, s.Warmup, s.Seed))
		if s.MetricsURL != "" {
			scrapes = append(scrapes, strconv.Itoa(i))
		}
	}
	if fmt.Sprint(scrapes) != "[0]" {
		t.Errorf("pods %v read /metrics, want pod 0 alone", scrapes)
	}
	// C=10 over 4: 3, 3, 2, 2; C=1: the first pod, the others sit it out.
	if want := "[1 3] 8 1 7|[0 3] 8 1 8|[0 2] 7 0 9|[0 2] 7 0 10"; strings.Join(got, "|") != want {
		t.Errorf("shares %s, want %s", strings.Join(got, "|"), want)
	}
	open := onhost.Spec{Rate: 30, MaxInFlight: 8, Requests: 90}
	if s, _ := Share(open, 2, 3); s.Rate != 10 || s.MaxInFlight != 2 || s.Requests != 30 {
		t.Errorf("rate 30 over 3: %g req/s, cap %d, %d requests", s.Rate, s.MaxInFlight, s.Requests)
	}
	for _, bad := range []struct {
		spec      onhost.Spec
		shard, of int
		want      string
	}{
		{spec, 4, 4, "shard 4 of 4"},
		{spec, -1, 4, "shard -1 of 4"},
		{onhost.Spec{Search: "rate"}, 0, 2, "search"},
		{onhost.Spec{Rate: 5, Burstiness: 0.5}, 0, 2, "gamma"},
	} {
		if _, err := Share(bad.spec, bad.shard, bad.of); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v %d/%d: err %v, want %q", bad.spec, bad.shard, bad.of, err, bad.want)
		}
	}
}

// The coordinator's address reaches the pods as written, whatever a YAML
// reader could take it for (10:30 is a number in base 60 to YAML 1.1).
func TestCoordinatorAddressIsKept(t *testing.T) {
	for _, addr := range []string{"10:30", "[::1]:7070", "coord.bench.svc.cluster.local:7070", "1e3:80", "true:1"} {
		o := testOptions()
		o.Coordinator = addr
		env := podEnv(t, write(t, o).job.Spec.Template.Spec.Containers[0], 0)
		if env[CoordinatorEnv] != addr {
			t.Errorf("coordinator %q reads back as %q", addr, env[CoordinatorEnv])
		}
	}
}

// The spec in the ConfigMap is the sweep's settings, read back strictly
// as the agent's Spec, with no API key.
func TestManifestSpecIsTheSweep(t *testing.T) {
	o := testOptions()
	d := write(t, o)
	dec := json.NewDecoder(strings.NewReader(d.cm.Data[SpecFile]))
	dec.DisallowUnknownFields()
	var got onhost.Spec
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.URL != o.Spec.URL || fmt.Sprint(got.Concurrency) != "[8 32]" || got.Requests != 64 || got.InputLen != 512 || got.Timeout != 5*time.Minute {
		t.Errorf("spec %+v", got)
	}
	if got.APIKey != "" || got.ServerLog != "" {
		t.Errorf("the spec holds an API key (%t) or the server's log %q", got.APIKey != "", got.ServerLog)
	}
}

func TestManifestHoldsNoSecret(t *testing.T) {
	o := testOptions()
	var b bytes.Buffer
	if err := Write(&b, o); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "sk-never-in-the-manifest") {
		t.Error("the API key is in the manifest")
	}
	o.Spec.APIKey = "sk-given"
	b.Reset()
	if err := Write(&b, o); err == nil || b.Len() > 0 || strings.Contains(err.Error(), "sk-given") {
		t.Errorf("a spec holding a key: err %v, %d bytes written", err, b.Len())
	}
	o = testOptions()
	o.APIKeySecret = ""
	c := write(t, o).job.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == "OPENAI_API_KEY" {
			t.Errorf("no Secret given, yet the pods have %s", e.Name)
		}
	}
}

// The decoder refuses what the API does not have: a misspelt field fails.
func TestDecodeIsStrict(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, testOptions()); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"completionMode:", "restartPolicy:", "runAsNonRoot:"} {
		text := strings.Replace(b.String(), bad, "x"+bad, 1)
		if _, err := decodeStrict([]byte(text)); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s misspelt: err %v, want unknown field", bad, err)
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Agents = 0 }, "agents: want 1 to"},
		{func(o *Options) { o.Agents = MaxAgents + 1 }, "agents: want 1 to"},
		{func(o *Options) { o.Image = "" }, "image: "},
		{func(o *Options) { o.Image = "a b" }, "image: "},
		{func(o *Options) { o.Name = "Sweep" }, "lower-case"},
		{func(o *Options) { o.Name = strings.Repeat("a", MaxNameLen+1) }, "at most 52"},
		{func(o *Options) { o.Namespace = "a_b" }, "lower-case"},
		{func(o *Options) { o.Coordinator = "10.0.0.5" }, "HOST:PORT"},
		{func(o *Options) { o.Coordinator = "h:0" }, "port from 1 to 65535"},
		{func(o *Options) { o.CPU = "2 cores" }, "quantity"},
		{func(o *Options) { o.Memory = "0" }, "more than 0"},
		{func(o *Options) { o.APIKeySecretKey = "a/b" }, "KEY of letters"},
		{func(o *Options) { o.APIKeySecret = "Vllm" }, "Secret's name"},
		{func(o *Options) { o.APIKeyEnv = "OPENAI-KEY" }, "variable"},
		{func(o *Options) { o.Deadline = 0 }, "deadline: want 1s"},
	} {
		o := testOptions()
		tc.set(&o)
		var b bytes.Buffer
		if err := Write(&b, o); err == nil || !strings.Contains(err.Error(), tc.want) || b.Len() > 0 {
			t.Errorf("%+v: err %v, want %q and nothing written", o, err, tc.want)
		}
	}
}

// What the checks take, Kubernetes takes: a quantity they accept parses
// as a positive resource.Quantity, a name is a DNS-1123 label.
func FuzzChecksAgreeWithKubernetes(f *testing.F) {
	for _, s := range []string{"2", "500m", "4Gi", "1.5", ".5", "1e3", "0", "-1", "2x", "1E", "abc", "sweep-a", "-a", "a-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckQuantity(s) == nil {
			q, err := resource.ParseQuantity(s)
			if err != nil || q.Sign() <= 0 {
				t.Errorf("quantity %q: taken here, Kubernetes: %v, sign %d", s, err, q.Sign())
			}
		}
		if CheckName(s) == nil && len(validation.IsDNS1123Label(s)) > 0 {
			t.Errorf("name %q: taken here, Kubernetes: %v", s, validation.IsDNS1123Label(s))
		}
	})
}
