package phases

// InputError is an engine's error about what the operator asked for (a
// prompt longer than the server's context, a concurrency this machine
// cannot open connections for): front-ends treat it as bad input (exit 2),
// not as a failure of the host or server.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }
