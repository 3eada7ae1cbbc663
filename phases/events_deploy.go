package phases

// Deployment is what serves a sweep's URL: one replica's parallelism and
// the GPUs it holds. The sweep records it so that a capacity plan can
// count GPUs: one replica holds TP × PP × DP GPUs (model.tp counts every
// GPU of a tensor-parallel group, across its nodes), spread over Nodes.
type Deployment struct {
	TP    int `json:"tp"`
	PP    int `json:"pp,omitempty"`
	DP    int `json:"dp,omitempty"`
	Nodes int `json:"nodes"`
	// GPUs is TP × PP × DP: the GPUs behind the one URL.
	GPUs int `json:"gpus"`
	// Source says where TP came from: "the launch command", "the
	// campaign's model.tp", or "the default model.tp" (nobody set it).
	Source string `json:"source"`
}

// ReplicaGPUs is TP × PP × DP, each at least 1.
func (d Deployment) ReplicaGPUs() int {
	return max(d.TP, 1) * max(d.PP, 1) * max(d.DP, 1)
}
