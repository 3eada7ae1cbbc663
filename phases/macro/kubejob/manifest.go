package kubejob

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// The agent's flags in a pod: the coordinator it dials, its shard (the
// completion index) of how many, and the spec's file.
const (
	FlagCoordinator = "--coordinator"
	FlagShard       = "--shard"
	FlagShards      = "--shards"
	FlagSpec        = "--spec"
)

// TTLAfterFinished is how long a finished Job and its pods (their logs)
// stay before Kubernetes deletes them, in seconds.
const TTLAfterFinished = 3600

// agentUser is the user the agent runs as: not root, whatever the image's.
const agentUser = 65532

// Write writes the manifest for o: the ConfigMap holding the sweep's
// settings, then the Indexed Job, as two YAML documents.
func Write(w io.Writer, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.Spec.APIKey != "" {
		return errors.New("the spec holds an API key: the pods take it from a Secret")
	}
	spec, err := json.MarshalIndent(o.Spec, "", "  ")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# profdeck loadgen manifest: %d load-generator agents as one Indexed Job; each pod takes\n", o.Agents)
	fmt.Fprintf(&b, "# its shard of the sweep from its completion index and streams its results to %s.\n", o.Coordinator)
	cm := configMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: o.meta(o.specName()),
		Data: map[string]string{SpecFile: string(spec) + "\n"}}
	for i, doc := range []any{cm, o.job()} {
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(doc); err != nil {
			return err
		}
		if err := enc.Close(); err != nil {
			return err
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}

func (o Options) specName() string { return o.Name + "-spec" }

// labels are every object's and pod's labels; the pods are selected by them.
func (o Options) labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "profdeck-loadgen", "app.kubernetes.io/instance": o.Name}
}

func (o Options) meta(name string) objectMeta {
	return objectMeta{Name: name, Namespace: o.Namespace, Labels: o.labels()}
}

// job is the Indexed Job: every agent at once, none retried (a pod lost
// is a partial level, said by the coordinator), none running past the
// deadline. The limit on failures is per index: a Job-wide backoffLimit
// reached would make Kubernetes stop every other pod when one is lost.
func (o Options) job() job {
	return job{APIVersion: "batch/v1", Kind: "Job", Metadata: o.meta(o.Name), Spec: jobSpec{
		CompletionMode: "Indexed", Completions: o.Agents, Parallelism: o.Agents, BackoffLimitPerIndex: 0,
		ActiveDeadlineSeconds:   int64(o.Deadline.Seconds()),
		TTLSecondsAfterFinished: TTLAfterFinished,
		Template: podTemplate{Metadata: objectMeta{Labels: o.labels()}, Spec: podSpec{
			RestartPolicy: "Never",
			SecurityContext: podSecurity{RunAsNonRoot: true, RunAsUser: agentUser,
				SeccompProfile: seccompProfile{Type: "RuntimeDefault"}},
			// One agent per node where the nodes allow: the point of N
			// agents is N hosts' CPUs, ports and NICs.
			TopologySpreadConstraints: []spreadConstr{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: "ScheduleAnyway", LabelSelector: labelSelector{MatchLabels: o.labels()}}},
			Containers: []container{o.agent()},
			Volumes:    []volume{{Name: "spec", ConfigMap: configMapSource{Name: o.specName()}}},
		}},
	}}
}

// agent is the agent's container.
func (o Options) agent() container {
	res := map[string]string{"cpu": o.CPU, "memory": o.Memory}
	return container{Name: "agent", Image: o.Image, Command: []string{"profdeck"},
		Args: []string{onhost.AgentCommand,
			FlagCoordinator + "=$(" + CoordinatorEnv + ")",
			FlagShard + "=$(" + IndexEnv + ")",
			FlagShards + "=$(" + AgentsEnv + ")",
			FlagSpec + "=" + SpecDir + "/" + SpecFile},
		Env:          o.env(),
		Resources:    resources{Requests: res, Limits: res},
		VolumeMounts: []volumeMount{{Name: "spec", MountPath: SpecDir, ReadOnly: true}},
		SecurityContext: containerSecurity{ReadOnlyRootFilesystem: true,
			Capabilities: capabilities{Drop: []string{"ALL"}}},
	}
}

// env is the agent's variables: its index (from the annotation Kubernetes
// writes), the coordinator, the number of agents and the API key's
// Secret reference.
func (o Options) env() []envVar {
	env := []envVar{
		{Name: IndexEnv, ValueFrom: &envSource{FieldRef: &fieldRef{
			FieldPath: "metadata.annotations['" + indexAnnotation + "']"}}},
		{Name: CoordinatorEnv, Value: o.Coordinator},
		{Name: AgentsEnv, Value: strconv.Itoa(o.Agents)},
	}
	if o.APIKeySecret != "" {
		env = append(env, envVar{Name: o.APIKeyEnv, ValueFrom: &envSource{
			SecretKeyRef: &secretKeyRef{Name: o.APIKeySecret, Key: o.APIKeySecretKey}}})
	}
	return env
}
