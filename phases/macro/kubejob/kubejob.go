// Package kubejob writes the macro sweep's load-generator agents as a
// Kubernetes Indexed Job: one pod per agent, each taking its shard of the
// sweep from its completion index, reading the sweep's settings from a
// ConfigMap and its API key from a Secret, and streaming its results to
// the coordinator, which it dials. The manifest is plain YAML written from
// structs shaped as the Kubernetes API's objects (batch/v1 Job, v1
// ConfigMap); the package's tests decode it strictly with the API's own
// types. Submitting it is for when a cluster is reachable.
package kubejob

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// Options are what the manifest is written from.
type Options struct {
	// Name names the Job, its ConfigMap (Name-spec) and its pods' labels.
	Name string
	// Namespace is the objects' namespace; "": the one kubectl uses.
	Namespace string
	// Image is the container image holding profdeck.
	Image string
	// Agents is the number of agents: the Job's completions and its
	// parallelism, so that every agent runs at once.
	Agents int
	// Coordinator is the coordinator's HOST:PORT as the pods reach it.
	Coordinator string
	// CPU and Memory are each agent's requests and limits (equal: the
	// pods are of the Guaranteed class), as Kubernetes quantities.
	CPU, Memory string
	// Deadline bounds the Job's run (activeDeadlineSeconds): past it,
	// Kubernetes stops every pod still running.
	Deadline time.Duration
	// APIKeyEnv is the variable the agent reads the server's API key from;
	// APIKeySecret and APIKeySecretKey the Secret and key that fill it
	// ("": the pods send no key).
	APIKeyEnv, APIKeySecret, APIKeySecretKey string
	// Spec is the sweep's settings (without an API key).
	Spec onhost.Spec
}

// The agent's files and variables in its pod.
const (
	// SpecDir is where the ConfigMap is mounted; SpecFile the spec in it.
	SpecDir  = "/etc/profdeck"
	SpecFile = "spec.json"
	// IndexEnv is the pod's completion index, as Kubernetes gives an
	// Indexed Job's pods; CoordinatorEnv and AgentsEnv the coordinator's
	// address and the number of agents.
	IndexEnv       = "JOB_COMPLETION_INDEX"
	CoordinatorEnv = "PROFDECK_COORDINATOR"
	AgentsEnv      = "PROFDECK_AGENTS"
	// indexAnnotation is where Kubernetes writes a pod's completion index.
	indexAnnotation = "batch.kubernetes.io/job-completion-index"
)

// MaxAgents bounds Options.Agents.
const MaxAgents = 1000

// MaxNameLen bounds Options.Name: the pods' host names are the Job's name,
// a dash and the index (at most 63 characters in all).
const MaxNameLen = 52

// dnsLabel is an RFC 1123 label, as Kubernetes names objects.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// CheckName says what is wrong with name as the Job's name, else nil.
func CheckName(name string) error {
	if len(name) > MaxNameLen || !dnsLabel.MatchString(name) {
		return fmt.Errorf("want lower-case letters, digits and inner dashes, at most %d characters, got %q", MaxNameLen, name)
	}
	return nil
}

// CheckNamespace says what is wrong with ns as a namespace, else nil ("":
// none given).
func CheckNamespace(ns string) error {
	if ns != "" && (len(ns) > 63 || !dnsLabel.MatchString(ns)) {
		return fmt.Errorf("want lower-case letters, digits and inner dashes, at most 63 characters, got %q", ns)
	}
	return nil
}

// quantity is a Kubernetes resource quantity: a decimal number with an
// optional binary (Ki … Ei), decimal (n u m k M G T P E) or exponent suffix.
var quantity = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?$`)

// CheckQuantity says what is wrong with q as a resource quantity (more
// than 0), else nil.
func CheckQuantity(q string) error {
	if !quantity.MatchString(q) {
		return fmt.Errorf("want a Kubernetes quantity such as 2, 500m or 4Gi, got %q", q)
	}
	num := q
	if m := quantity.FindStringSubmatch(q); m[3] != "" {
		num = m[1]
	}
	if v, err := strconv.ParseFloat(num, 64); err != nil || v <= 0 {
		return fmt.Errorf("want more than 0, got %q", q)
	}
	return nil
}

// CheckCoordinator says what is wrong with addr as the coordinator's
// HOST:PORT, else nil.
func CheckCoordinator(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("want HOST:PORT as the pods reach the coordinator, got %q", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("want a port from 1 to 65535, got %q", port)
	}
	return nil
}

// secretKey is a key of a Secret's data; dnsSubdomain a Secret's name.
var (
	secretKey    = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// CheckSecretRef says what is wrong with a Secret's name and key, else nil.
func CheckSecretRef(name, key string) error {
	if name == "" || len(name) > 253 || !dnsSubdomain.MatchString(name) {
		return fmt.Errorf("want NAME/KEY, NAME a Secret's name, got %q", name)
	}
	if len(key) > 253 || !secretKey.MatchString(key) {
		return fmt.Errorf("want NAME/KEY, KEY of letters, digits, '-', '_' or '.', got %q", key)
	}
	return nil
}

// envName is a variable's name as the agent's environment takes it.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkEnvName(name string) error {
	if !envName.MatchString(name) {
		return fmt.Errorf("the API key's variable: want letters, digits and '_', got %q", name)
	}
	return nil
}

// check says the first thing wrong with o, else nil.
func (o Options) check() error {
	errs := []error{CheckName(o.Name), CheckNamespace(o.Namespace), CheckCoordinator(o.Coordinator),
		CheckQuantity(o.CPU), CheckQuantity(o.Memory)}
	if o.APIKeySecret != "" {
		errs = append(errs, CheckSecretRef(o.APIKeySecret, o.APIKeySecretKey), checkEnvName(o.APIKeyEnv))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	switch {
	case o.Agents < 1 || o.Agents > MaxAgents:
		return fmt.Errorf("agents: want 1 to %d, got %d", MaxAgents, o.Agents)
	case o.Image == "" || strings.ContainsFunc(o.Image, unicode.IsSpace):
		return fmt.Errorf("image: want an image reference such as registry.example/profdeck:0.1, got %q", o.Image)
	case o.Deadline < time.Second:
		return fmt.Errorf("deadline: want 1s or more, got %s", o.Deadline)
	}
	return nil
}
