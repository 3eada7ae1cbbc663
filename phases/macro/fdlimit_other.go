//go:build !unix

package macro

func fdLimit() (soft, hard uint64) { return 0, 0 }

func isClientLimit(err error) bool { return false }
