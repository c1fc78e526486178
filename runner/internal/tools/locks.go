package tools

import "github.com/benchkite/benchkite/internal/toollocks"

// Set is one locked tool set: one lock file, one venv. Recipes with and
// without BFCL use different sets and so different venvs: installing one
// never touches the other.
type Set struct {
	// Name names the set and its venv: "lm-eval" or "lm-eval-bfcl".
	Name string
	// Lock is the lock file pip installs with --require-hashes.
	Lock []byte
	// Packages are the top-level pins, checked after the install and
	// reported by version.
	Packages []Package
}

// Locked is the tool set a recipe needs: lm-eval always, with bfcl-eval
// and soundfile when it has a bfcl block. A bench-only run needs none.
func Locked(bfcl bool) Set {
	l := toollocks.For(bfcl)
	return Set{Name: l.Name, Lock: l.Text, Packages: Pinned(bfcl)}
}

func (s Set) lock() toollocks.Lock { return toollocks.Lock{Name: s.Name, Text: s.Lock} }

// Hash is the lock's sha256 in hex, shortened as in Key.
func (s Set) Hash() string { return s.lock().SHA256()[:16] }

// Key is the venv's name in the tools directory: name-hash.
func (s Set) Key() string { return s.lock().Key() }

func (s Set) empty() bool { return len(s.Packages) == 0 }
