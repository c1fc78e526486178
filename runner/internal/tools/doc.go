// Package tools provisions the evaluation tools a GPU job needs before
// the server starts: lm_eval, and bfcl-eval for recipes with a bfcl
// block.
//
// The vLLM images carry vLLM and Python but neither lm-evaluation-harness
// nor bfcl-eval, so the runner installs them, pinned, into a virtual
// environment; an install that fails then costs no model load. A venv
// that already holds the pinned versions is reused. Where the image's
// Python has no venv module the tools go to the user site instead
// (pip install --user, PIP_BREAK_SYSTEM_PACKAGES=1). Custom images and
// tests that bring their own tools use ModePath (BENCHKITE_TOOLS=path),
// which installs nothing.
//
// Every command goes through proc.Runner, and Plan returns the very specs
// Provision runs, so `runner plan` can print them. pip sees the job's
// index settings (PIP_INDEX_URL, PIP_FIND_LINKS, ...) and nothing else of
// the job's environment: see childenv.Install.
package tools
