//go:build !linux

package proc

// Identity needs /proc; elsewhere there is none.
func Identity() string { return "" }

// IdentityAlive cannot tell without /proc.
func IdentityAlive(string) (alive, known bool) { return false, false }
