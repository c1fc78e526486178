package main

import (
	"fmt"
	"strconv"
	"time"
)

// Environment knobs; the standins package documentation describes each one.
const (
	envStartupDelay     = "FAKE_VLLM_STARTUP_DELAY"
	envExitDuringLoad   = "FAKE_VLLM_EXIT_DURING_LOAD"
	envExitMessage      = "FAKE_VLLM_EXIT_MESSAGE"
	envDieAfterRequests = "FAKE_VLLM_DIE_AFTER_REQUESTS"
	envUnhealthyAfter   = "FAKE_VLLM_UNHEALTHY_AFTER_REQUESTS"
	envNeverHealthy     = "FAKE_VLLM_NEVER_HEALTHY"
	envAccuracy         = "FAKE_VLLM_ACCURACY"
	envTokenDelay       = "FAKE_VLLM_TOKEN_DELAY"
	envIgnoreSIGTERM    = "FAKE_VLLM_IGNORE_SIGTERM"
	envArgvLog          = "FAKE_VLLM_ARGV_LOG"
	envNoSpeculation    = "FAKE_VLLM_NO_SPECULATION"
	envPidFile          = "FAKE_VLLM_PID_FILE"
	envBenchKillPidFile = "FAKE_VLLM_BENCH_KILL_PIDFILE"
	envBenchNoOutput    = "FAKE_VLLM_BENCH_NO_OUTPUT"
	envPlantFrom        = "FAKE_VLLM_PLANT_FROM"
	envPlantInto        = "FAKE_VLLM_PLANT_INTO"
	envRewriteInto      = "FAKE_VLLM_REWRITE_INTO"
	envRewriteScore     = "FAKE_VLLM_REWRITE_SCORE"
	envBFCLData         = "FAKE_VLLM_BFCL_DATA"
)

const defaultExitMessage = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.72 GiB of which 1.06 GiB is free."

// knobs reads FAKE_VLLM_* variables, remembering the first bad one.
type knobs struct {
	getenv func(string) string
	err    error
}

func (k *knobs) fail(key, val string, err error) {
	if k.err == nil {
		k.err = fmt.Errorf("invalid %s=%q: %w", key, val, err)
	}
}

func (k *knobs) duration(key string, def time.Duration) time.Duration {
	v := k.getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		// Plain numbers are seconds, as shell scripts tend to write them.
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			k.fail(key, v, err)
			return def
		}
		d = time.Duration(f * float64(time.Second))
	}
	return d
}

func (k *knobs) int(key string, def int) int {
	v := k.getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		k.fail(key, v, err)
		return def
	}
	return n
}

func (k *knobs) float(key string, def float64) float64 {
	v := k.getenv(key)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		k.fail(key, v, err)
		return def
	}
	return f
}

func (k *knobs) bool(key string) bool {
	v := k.getenv(key)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		k.fail(key, v, err)
	}
	return b
}

func (k *knobs) string(key, def string) string {
	if v := k.getenv(key); v != "" {
		return v
	}
	return def
}
