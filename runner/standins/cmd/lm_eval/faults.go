package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
)

// Fault knobs for what a broken evaluation leaves behind; the standins
// package documentation describes them.
const (
	envScore    = "FAKE_LMEVAL_SCORE"
	envNoOutput = "FAKE_LMEVAL_NO_OUTPUT"
	// envExitDelay is how long the stand-in waits between writing its
	// results and printing its table.
	envExitDelay = "FAKE_LMEVAL_EXIT_DELAY"
)

// scoreKey is the score FAKE_LMEVAL_SCORE replaces.
const scoreKey = "exact_match,flexible-extract"

// overrideScore applies FAKE_LMEVAL_SCORE to the gsm8k entry of results:
// "nan" and "inf" write Python's bare NaN and Infinity, "string:TEXT" a
// JSON string, "missing" drops the key.
func overrideScore(results *pyjson.Object, spec string) error {
	if spec == "" {
		return nil
	}
	r, _ := results.Get("results")
	tasks, ok := r.(*pyjson.Object)
	if !ok {
		return fmt.Errorf("%s: no results", envScore)
	}
	t, _ := tasks.Get("gsm8k")
	task, ok := t.(*pyjson.Object)
	if !ok {
		return fmt.Errorf("%s: no gsm8k results", envScore)
	}
	switch {
	case spec == "nan":
		task.Set(scoreKey, math.NaN())
	case spec == "inf":
		task.Set(scoreKey, math.Inf(1))
	case spec == "missing":
		task.Delete(scoreKey)
	case strings.HasPrefix(spec, "string:"):
		task.Set(scoreKey, strings.TrimPrefix(spec, "string:"))
	default:
		return fmt.Errorf("invalid %s=%q: want nan, inf, missing or string:TEXT", envScore, spec)
	}
	return nil
}
