package tools

import "fmt"

// Mode is how the tools are found.
type Mode string

const (
	// ModeVenv installs the pinned tools into a venv (the default).
	ModeVenv Mode = "venv"
	// ModeUser is the fallback of ModeVenv where Python has no venv
	// module: pip install --user. Provision picks it; it is not asked for.
	ModeUser Mode = "user"
	// ModePath installs nothing and uses lm_eval, vllm and python3 as
	// found on PATH, with PYTHONPATH as the job gives it.
	ModePath Mode = "path"
)

// ParseMode reads BENCHKITE_TOOLS (or the flag): "" or "venv", or "path".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", string(ModeVenv):
		return ModeVenv, nil
	case string(ModePath):
		return ModePath, nil
	}
	return "", fmt.Errorf("tools mode %q: want venv or path", s)
}
