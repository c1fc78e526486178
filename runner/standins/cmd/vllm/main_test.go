package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary be the engine process that in-process
// "vllm serve" starts by re-running its own executable.
func TestMain(m *testing.M) {
	if role := os.Getenv(envEngineRole); role != "" {
		os.Exit(runEngine(role))
	}
	os.Exit(m.Run())
}
