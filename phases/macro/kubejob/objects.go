package kubejob

// The objects the manifest holds, shaped as the Kubernetes API's: each
// field carries the API's JSON name, and only the fields written are
// declared. A zero that means something (backoffLimit: 0, false) is
// written; an empty optional field is left out.

type objectMeta struct {
	Name      string            `yaml:"name,omitempty"`
	Namespace string            `yaml:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

type job struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       jobSpec    `yaml:"spec"`
}

type jobSpec struct {
	CompletionMode          string      `yaml:"completionMode"`
	Completions             int         `yaml:"completions"`
	Parallelism             int         `yaml:"parallelism"`
	BackoffLimitPerIndex    int         `yaml:"backoffLimitPerIndex"`
	ActiveDeadlineSeconds   int64       `yaml:"activeDeadlineSeconds"`
	TTLSecondsAfterFinished int         `yaml:"ttlSecondsAfterFinished"`
	Template                podTemplate `yaml:"template"`
}

type podTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy                string         `yaml:"restartPolicy"`
	AutomountServiceAccountToken bool           `yaml:"automountServiceAccountToken"`
	EnableServiceLinks           bool           `yaml:"enableServiceLinks"`
	SecurityContext              podSecurity    `yaml:"securityContext"`
	TopologySpreadConstraints    []spreadConstr `yaml:"topologySpreadConstraints"`
	Containers                   []container    `yaml:"containers"`
	Volumes                      []volume       `yaml:"volumes"`
}

type podSecurity struct {
	RunAsNonRoot   bool           `yaml:"runAsNonRoot"`
	RunAsUser      int64          `yaml:"runAsUser"`
	SeccompProfile seccompProfile `yaml:"seccompProfile"`
}

type seccompProfile struct {
	Type string `yaml:"type"`
}

type spreadConstr struct {
	MaxSkew           int           `yaml:"maxSkew"`
	TopologyKey       string        `yaml:"topologyKey"`
	WhenUnsatisfiable string        `yaml:"whenUnsatisfiable"`
	LabelSelector     labelSelector `yaml:"labelSelector"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type container struct {
	Name            string            `yaml:"name"`
	Image           string            `yaml:"image"`
	Command         []string          `yaml:"command"`
	Args            []string          `yaml:"args"`
	Env             []envVar          `yaml:"env"`
	Resources       resources         `yaml:"resources"`
	VolumeMounts    []volumeMount     `yaml:"volumeMounts"`
	SecurityContext containerSecurity `yaml:"securityContext"`
}

type envVar struct {
	Name      string     `yaml:"name"`
	Value     string     `yaml:"value,omitempty"`
	ValueFrom *envSource `yaml:"valueFrom,omitempty"`
}

type envSource struct {
	FieldRef     *fieldRef     `yaml:"fieldRef,omitempty"`
	SecretKeyRef *secretKeyRef `yaml:"secretKeyRef,omitempty"`
}

type fieldRef struct {
	FieldPath string `yaml:"fieldPath"`
}

type secretKeyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type resources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

type containerSecurity struct {
	AllowPrivilegeEscalation bool         `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   bool         `yaml:"readOnlyRootFilesystem"`
	Capabilities             capabilities `yaml:"capabilities"`
}

type capabilities struct {
	Drop []string `yaml:"drop"`
}

type volume struct {
	Name      string          `yaml:"name"`
	ConfigMap configMapSource `yaml:"configMap"`
}

type configMapSource struct {
	Name string `yaml:"name"`
}
