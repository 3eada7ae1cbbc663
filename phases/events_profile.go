package phases

// Profile-phase event kinds.
const (
	KindProfileStep    = "profile.step" // capture progress: "start_profile", "load", "stop_profile", "collect" (ephemeral)
	KindProfileSummary = "profile.summary"
)

// ProfileStep is one step of a capture, with elapsed time.
type ProfileStep struct {
	Step     string  `json:"step"`
	ElapsedS float64 `json:"elapsed_s"`
	Detail   string  `json:"detail,omitempty"`
}

// Kernel is one device kernel in a profile summary.
type Kernel struct {
	Name       string  `json:"name"`
	SelfCUDAUs float64 `json:"self_cuda_us"`
	Calls      int     `json:"calls"`
	Category   string  `json:"category"`
}

// ProfileSummary is the parsed profile: category split and top kernels.
type ProfileSummary struct {
	Source             string             `json:"source"`
	TotalCUDAUs        float64            `json:"total_cuda_us"`
	Categories         map[string]float64 `json:"categories"`
	CommunicationShare float64            `json:"communication_share"`
	Top                []Kernel           `json:"top"`
	DecodeSteps        int                `json:"decode_steps,omitempty"`
}

func init() {
	Register(KindProfileStep, Profile, ProfileStep{}, true)
	Register(KindProfileSummary, Profile, ProfileSummary{}, false)
}
