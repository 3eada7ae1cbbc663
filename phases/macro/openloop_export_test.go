package macro

// SetMaxOpenInFlight lowers the open loop's bound for a test.
func SetMaxOpenInFlight(n int) { maxOpenInFlight = n }
