//go:build !unix

package macropane

import "time"

func cpuTime() time.Duration { return 0 }
