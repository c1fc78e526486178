//go:build !linux

package secrets

// reexecs: outside Linux no /proc shows another process's environment,
// and the runner keeps its secrets where they are.
const reexecs = false

// nonDumpable has no equivalent outside Linux.
func nonDumpable() error { return nil }

func reexec(argv, clean []string, data []byte) error { return nil }

func isPipe(fd int) bool { return false }
