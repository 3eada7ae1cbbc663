package headless

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases/macro/kubejob"
	"github.com/profdeck/profdeck/phases/macro/onhost"
)

const loadgenUsage = `profdeck loadgen manifest [-c FILE] --agents N --image IMAGE --coordinator HOST:PORT [--url URL] [FLAGS]

The campaign's load generator spread over N agents. Its one subcommand,
manifest, writes them as a Kubernetes Indexed Job (docs/scale-out-kubernetes.md).`

const manifestUsage = `profdeck loadgen manifest [-c FILE] --agents N --image IMAGE --coordinator HOST:PORT [--url URL]
                         [--name NAME] [--namespace NS] [--cpu Q] [--memory Q] [--api-key-secret NAME/KEY] [--deadline D]

Writes on stdout the campaign's sweep as a Kubernetes Indexed Job of N
load-generator agents, one pod each, and the ConfigMap holding the sweep's
settings: each pod takes its shard from its completion index, dials the
coordinator at HOST:PORT and streams its results there. The server is the
campaign's server.url (--url) as the pods reach it, never a loopback address.
The API key comes from the Secret --api-key-secret names, into the variable
server.api_key_env names; no key is ever written. It opens no host and
submits nothing: kubectl apply -f FILE does, where a cluster is reachable.
Exit 0, 1 when the manifest cannot be written, 2 for bad input.`

// manifestBinds are the manifest flags that set campaign keys.
var manifestBinds = []campaign.Flag{{Name: "url", Key: "server.url"}}

// LoadgenMain is "profdeck loadgen": its subcommand manifest.
func LoadgenMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "usage: "+loadgenUsage)
		return ExitOK
	}
	if len(args) == 0 || args[0] != "manifest" {
		got := "nothing"
		if len(args) > 0 {
			got = fmt.Sprintf("%q", args[0])
		}
		fmt.Fprintf(stderr, "profdeck loadgen: want the subcommand manifest, got %s (see profdeck loadgen -h)\n", got)
		return ExitBadInput
	}
	return ManifestMain(ctx, args[1:], stdout, stderr)
}

// ManifestMain is "profdeck loadgen manifest": the Indexed Job on stdout.
func ManifestMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, resolve := newManifest(stdout, stderr)
	o, err := resolve(args)
	if err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, kubejob.Write(stdout, o))
}

// newManifest makes the manifest command; resolve parses its arguments
// and the campaign into the manifest's options, or says the first thing
// wrong as bad input naming the flag or key.
func newManifest(stdout, stderr io.Writer) (*Command, func(args []string) (kubejob.Options, error)) {
	c := newCommand("loadgen manifest", manifestUsage, stdout, stderr)
	c.flagCampaign()
	fs := c.Flags
	fs.String("url", "", "the server's base URL as the pods reach it (default: the campaign's server.url)")
	var o kubejob.Options
	var secret string
	fs.IntVar(&o.Agents, "agents", 0, fmt.Sprintf("the number of agents: the Job's pods, all at once (1 to %d)", kubejob.MaxAgents))
	fs.StringVar(&o.Image, "image", "", "the container image holding profdeck, e.g. registry.example/profdeck:0.1")
	fs.StringVar(&o.Coordinator, "coordinator", "", "the coordinator's HOST:PORT as the pods reach it: each agent dials it and streams its results there")
	fs.StringVar(&o.Name, "name", "profdeck-loadgen", "the Job's name (its ConfigMap is NAME-spec)")
	fs.StringVar(&o.Namespace, "namespace", "", "the namespace (default: kubectl's)")
	fs.StringVar(&o.CPU, "cpu", "2", "each agent's CPU, requested and its limit (a Kubernetes quantity: 2, 500m)")
	fs.StringVar(&o.Memory, "memory", "2Gi", "each agent's memory, requested and its limit (a Kubernetes quantity: 2Gi)")
	fs.StringVar(&secret, "api-key-secret", "", "the Secret and its key holding the server's API key, as NAME/KEY (default: no key)")
	fs.DurationVar(&o.Deadline, "deadline", 2*time.Hour, "past this, Kubernetes stops every agent still running")
	return c, func(args []string) (kubejob.Options, error) {
		if err := c.Parse(args); err != nil {
			return o, err
		}
		camp, _, err := c.Campaign(manifestBinds...)
		if err != nil {
			return o, err
		}
		if err := checkManifestFlags(c, &o, secret); err != nil {
			return o, err
		}
		cfg := camp.SweepConfig("")
		if err := podServer(c, cfg.URL, cfg.DatasetFile); err != nil {
			return o, err
		}
		o.APIKeyEnv, o.Spec = camp.APIKeyEnv(), onhost.PodSpec(cfg, camp.MetricsURL())
		if o.APIKeySecret == "" && camp.APIKey() != "" {
			fmt.Fprintf(c.Stderr, "profdeck loadgen manifest: $%s is set here, but without --api-key-secret the pods send no API key\n", camp.APIKeyEnv())
		}
		return o, nil
	}
}

// checkManifestFlags checks the flags the campaign has no key for, naming
// the flag, and splits --api-key-secret into o.
func checkManifestFlags(c *Command, o *kubejob.Options, secret string) error {
	if !c.Set("agents") {
		return BadInput("no agents: give --agents N, the Job's pods (1 to %d)", kubejob.MaxAgents)
	}
	if secret != "" {
		o.APIKeySecret, o.APIKeySecretKey, _ = strings.Cut(secret, "/")
	}
	for _, ck := range []struct {
		flag string
		err  error
	}{
		{"agents", boundsErr(o.Agents, 1, kubejob.MaxAgents)},
		{"image", imageErr(o.Image)},
		{"coordinator", kubejob.CheckCoordinator(o.Coordinator)},
		{"name", kubejob.CheckName(o.Name)},
		{"namespace", kubejob.CheckNamespace(o.Namespace)},
		{"cpu", kubejob.CheckQuantity(o.CPU)},
		{"memory", kubejob.CheckQuantity(o.Memory)},
		{"api-key-secret", secretErr(c, o)},
		{"deadline", boundsErr(o.Deadline, time.Second, 7*24*time.Hour)},
	} {
		if ck.err != nil {
			return BadInput("--%s: %v", ck.flag, ck.err)
		}
	}
	return nil
}

func boundsErr[T int | time.Duration](v, least, most T) error {
	if v < least || v > most {
		return fmt.Errorf("want %v to %v, got %v", least, most, v)
	}
	return nil
}

func imageErr(image string) error {
	if image == "" || strings.ContainsAny(image, " \t\r\n") {
		return fmt.Errorf("want the image holding profdeck, e.g. registry.example/profdeck:0.1, got %q", image)
	}
	return nil
}

func secretErr(c *Command, o *kubejob.Options) error {
	if !c.Set("api-key-secret") {
		return nil
	}
	return kubejob.CheckSecretRef(o.APIKeySecret, o.APIKeySecretKey)
}

// podServer says what keeps the pods from reaching the server: a loopback
// URL is the pod itself; a dataset file is on this machine only.
func podServer(c *Command, server, datasetFile string) error {
	name := "server.url"
	if c.Set("url") {
		name = "--url"
	}
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return BadInput("%s: want the server's URL as the pods reach it, got %q", name, server)
	}
	if h := u.Hostname(); h == "localhost" || net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback() {
		return BadInput("%s %s: a loopback address is the pod itself: give the server's address as the pods reach it", name, server)
	}
	if datasetFile != "" {
		return BadInput("macro.dataset_file %s: a file here does not reach the pods: give the sweep a random dataset", datasetFile)
	}
	return nil
}
