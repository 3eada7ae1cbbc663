package macro

import (
	"regexp"
	"strconv"
)

// The parallel sizes a launch command sets: vLLM's long and short flags,
// and SGLang's.
var (
	tpFlag = regexp.MustCompile(`(?:--tensor[-_]parallel[-_]size|--tp[-_]size|--tp|-tp)(?:=|\s+)(\d+)\b`)
	ppFlag = regexp.MustCompile(`(?:--pipeline[-_]parallel[-_]size|--pp[-_]size|-pp)(?:=|\s+)(\d+)\b`)
	dpFlag = regexp.MustCompile(`(?:--data[-_]parallel[-_]size|--dp[-_]size|--dp|-dp)(?:=|\s+)(\d+)\b`)
)

// ParallelFromLaunch reads the tensor-, pipeline- and data-parallel sizes
// a vLLM or SGLang launch command sets (0 for each it does not set).
func ParallelFromLaunch(cmd string) (tp, pp, dp int) {
	get := func(re *regexp.Regexp) int {
		m := re.FindStringSubmatch(cmd)
		if m == nil {
			return 0
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 || n > 1<<16 {
			return 0
		}
		return n
	}
	return get(tpFlag), get(ppFlag), get(dpFlag)
}
