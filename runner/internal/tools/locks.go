package tools

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

// The lock files, made from the .in files beside them by
// locks/compile.sh (`make locks`): every transitive dependency pinned,
// with its hashes. They are compiled into the runner, which ships to GPU
// jobs as one file.
var (
	//go:embed locks/lm-eval.txt
	lmEvalLock []byte
	//go:embed locks/lm-eval-bfcl.txt
	lmEvalBFCLLock []byte
)

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
	if bfcl {
		return Set{Name: "lm-eval-bfcl", Lock: lmEvalBFCLLock, Packages: Pinned(true)}
	}
	return Set{Name: "lm-eval", Lock: lmEvalLock, Packages: Pinned(false)}
}

// Hash is the lock's sha256 in hex, shortened: it keys the venv, so a
// changed lock gets a new venv and an unchanged one is reused.
func (s Set) Hash() string {
	sum := sha256.Sum256(s.Lock)
	return hex.EncodeToString(sum[:])[:16]
}

// Key is the venv's name in the tools directory: name-hash.
func (s Set) Key() string { return s.Name + "-" + s.Hash() }

func (s Set) empty() bool { return len(s.Packages) == 0 }
