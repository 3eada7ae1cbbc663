package phases

// Doctor is the phase that checks, in seconds and before any load, what a
// campaign needs on its host.
const Doctor = "doctor"

// KindDoctorCheck is one check's outcome.
const KindDoctorCheck = "doctor.check"

// A check's status: ok, warn (the campaign can run, with what it says) or
// fail (something the campaign needs is missing).
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// DoctorCheck is one check: what it looked at, what it found and, when it is
// not ok, the fix.
type DoctorCheck struct {
	Name   string  `json:"name"`
	Status string  `json:"status"`
	Found  string  `json:"found"`
	Fix    string  `json:"fix,omitempty"`
	Ms     float64 `json:"ms"`
}

func init() {
	Register(KindDoctorCheck, Doctor, DoctorCheck{}, false)
}
