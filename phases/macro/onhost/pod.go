package onhost

import "github.com/profdeck/profdeck/phases/macro"

// PodSpec is the spec an agent started as a Kubernetes pod reads from its
// ConfigMap (phases/macro/kubejob): cfg's travelling part, as an agent
// started over SSH reads it on stdin, without the API key, which the pod
// takes from a Secret, and without the server's log, a file on the
// server's host that no pod has.
func PodSpec(cfg macro.Config, metricsURL string) Spec {
	s := specOf(cfg, metricsURL)
	s.APIKey, s.ServerLog = "", ""
	return s
}
