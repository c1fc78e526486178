package tools

import (
	"slices"
	"strings"
)

// Package is one pinned distribution to install.
type Package struct {
	// Name is the distribution name as pip and importlib.metadata know it.
	Name string
	// Extras are the extras to install with it ("api").
	Extras []string
	// Version is the exact version.
	Version string
}

// Requirement is the pip requirement: name[extras]==version.
func (p Package) Requirement() string {
	r := p.Name
	if len(p.Extras) > 0 {
		r += "[" + strings.Join(p.Extras, ",") + "]"
	}
	return r + "==" + p.Version
}

// The pinned tools. Pinned so that a night's accuracy cannot move because
// a tool released; bump them on purpose, in a commit of their own.
var (
	// LMEval is lm-evaluation-harness 0.4.12 (tag v0.4.12, 2026-05-11),
	// its newest release. The api extra brings the HTTP clients
	// (requests, aiohttp, tenacity, tiktoken) that the local-completions
	// model needs; lm-eval's core dependencies do not.
	LMEval = Package{Name: "lm-eval", Extras: []string{"api"}, Version: "0.4.12"}
	// BFCLEval is bfcl-eval 2026.3.23, the newest upload: bfcl-eval is
	// published on every push to gorilla's main under a date version,
	// and this one is gorilla commit 6ea5797 (2026-03-23), which has the
	// Python API the BFCL driver uses (bfcl_eval.__main__.generate and
	// evaluate, MODEL_CONFIG_MAPPING).
	BFCLEval = Package{Name: "bfcl-eval", Version: "2026.3.23"}
	// Soundfile is imported by bfcl-eval without being declared as a
	// dependency; 0.13.1 is its newest release.
	Soundfile = Package{Name: "soundfile", Version: "0.13.1"}
)

// Pinned is what a recipe needs: lm-eval always, bfcl-eval and soundfile
// when it has a bfcl block. A bench-only run needs nothing: pass no
// packages at all.
func Pinned(bfcl bool) []Package {
	if bfcl {
		return []Package{LMEval, BFCLEval, Soundfile}
	}
	return []Package{LMEval}
}

func requirements(pkgs []Package) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = p.Requirement()
	}
	return out
}

func hasPackage(pkgs []Package, name string) bool {
	return slices.ContainsFunc(pkgs, func(p Package) bool { return p.Name == name })
}
