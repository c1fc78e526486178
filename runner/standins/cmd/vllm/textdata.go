package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// textDataset is one of vLLM's real-text bench datasets (--dataset-name
// hf): its default output length and the first words of its prompts.
type textDataset struct {
	defaultOutputLen int
	split            string
}

// textDatasets are the hf datasets this stand-in emulates, with vLLM's
// defaults (MTBenchDataset 256 tokens, InstructCoderDataset 200).
var textDatasets = map[string]textDataset{
	"philschmid/mt-bench":    {defaultOutputLen: 256, split: "train"},
	"likaixin/InstructCoder": {defaultOutputLen: 200, split: "train"},
}

func textDatasetPaths() []string {
	var out []string
	for p := range textDatasets {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// hfOffline is what datasets reads: HF_HUB_OFFLINE or HF_DATASETS_OFFLINE.
func hfOffline(getenv func(string) string) bool {
	for _, k := range []string{"HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"} {
		switch strings.ToLower(getenv(k)) {
		case "1", "true", "yes", "on":
			return true
		}
	}
	return false
}

// loadTextDataset does what datasets' load_dataset does for the bench: a
// streamed dataset is read from the hub every time; one loaded with
// --no-stream is read from $HF_HOME/datasets/<org>___<name>, fetched into
// it first when missing. Offline, any fetch fails as datasets fails. Every
// fetch is appended to $FAKE_HF_FETCH_LOG, so a test can tell that none
// happened.
func loadTextDataset(o benchOptions, getenv func(string) string) error {
	home := getenv("HF_HOME")
	if home == "" {
		home = filepath.Join(getenv("HOME"), ".cache", "huggingface")
	}
	dir := filepath.Join(home, "datasets", strings.ReplaceAll(o.datasetPath, "/", "___"))
	if o.noStream {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return nil
		}
	}
	if hfOffline(getenv) {
		return fmt.Errorf("Couldn't reach '%s' on the Hub (LocalEntryNotFoundError)", o.datasetPath)
	}
	if log := getenv("FAKE_HF_FETCH_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		fmt.Fprintln(f, o.datasetPath)
		f.Close()
	}
	if o.noStream {
		return os.MkdirAll(dir, 0o755)
	}
	return nil
}

// textSamples are prompts of real-text lengths (a few dozen to a few
// hundred tokens, each its own) and a fixed answer length.
func textSamples(o benchOptions) []sampleRequest {
	rng := rand.New(rand.NewPCG(uint64(o.seed), 0x7e47))
	outLen := textDatasets[o.datasetPath].defaultOutputLen
	if o.hfOutputLen != nil {
		outLen = *o.hfOutputLen
	}
	out := make([]sampleRequest, o.numPrompts)
	for i := range out {
		n := 24 + rng.IntN(280)
		words := make([]string, n)
		for j := range words {
			words[j] = vocabulary[(i*7+j*3)%len(vocabulary)]
		}
		out[i] = sampleRequest{prompt: strings.Join(words, " "), promptLen: n, outputLen: outLen}
	}
	return out
}
