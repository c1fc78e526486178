// Package toollocks holds the lock files of the evaluation tool sets and
// the key that names each set's venv. The runner installs a set from its
// lock; the generator shows where it goes. The locks are made from the
// .in files beside them by compile.sh (`make locks`): every transitive
// dependency pinned, with its hashes, and compiled into both binaries.
package toollocks

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

var (
	//go:embed lm-eval.txt
	lmEval []byte
	//go:embed lm-eval-bfcl.txt
	lmEvalBFCL []byte
	//go:embed aiperf.txt
	aiperf []byte
	//go:embed pytest.txt
	pytest []byte
)

// Pytest is the lock of pytest and its dependencies, installed into the
// server's Python when it cannot import pytest: torch.compile imports
// cupy's testing helpers, which need it, in the CUDA nightlies.
func Pytest() Lock { return Lock{Name: "pytest", Text: pytest} }

// AIPerf is the lock of aiperf, the second load generator, which has a
// venv of its own: it needs Python 3.11 or newer and its own pins.
func AIPerf() Lock { return Lock{Name: "aiperf", Text: aiperf} }

// Lock is one tool set's lock file.
type Lock struct {
	// Name names the set: "lm-eval" or "lm-eval-bfcl".
	Name string
	// Text is the pip requirements file, every line pinned and hashed.
	Text []byte
}

// For is the lock of the tools a recipe needs: lm-eval, with bfcl-eval
// when it has a bfcl block.
func For(bfcl bool) Lock {
	if bfcl {
		return Lock{Name: "lm-eval-bfcl", Text: lmEvalBFCL}
	}
	return Lock{Name: "lm-eval", Text: lmEval}
}

// SHA256 is the lock's sha256 in hex.
func (l Lock) SHA256() string {
	sum := sha256.Sum256(l.Text)
	return hex.EncodeToString(sum[:])
}

// Key names the set's venv, name-hash with the hash shortened: a changed
// lock gets a new venv, an unchanged one is reused.
func (l Lock) Key() string { return l.Name + "-" + l.SHA256()[:16] }
