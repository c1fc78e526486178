package baseline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
)

// FileVersion is the layout version of the history file.
const FileVersion = 1

// File is the history artifact: the past nights of every recipe a build
// compares with, fetched once by the history step, so that GPU jobs need
// no API token and make no API call.
type File struct {
	Version int `json:"version"`
	// BuildNumber is the build that fetched them; its own and later
	// builds are never among the nights.
	BuildNumber int                   `json:"build_number,omitempty"`
	FetchedAt   time.Time             `json:"fetched_at,omitzero"`
	Recipes     map[string]FileRecipe `json:"recipes"`
}

// FileRecipe is one recipe's nights, newest first, or why there are none.
type FileRecipe struct {
	StepKey string      `json:"step_key"`
	Asked   int         `json:"asked"`
	Nights  []FileNight `json:"nights"`
	Missed  []FileMiss  `json:"missed,omitempty"`
	// Error is why the fetch failed; the nights found before it stay.
	Error string `json:"error,omitempty"`
}

// FileNight is a Night with its summary as JSON, not as a string.
type FileNight struct {
	BuildNumber int       `json:"build_number"`
	BuildURL    string    `json:"build_url,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	Commit      string    `json:"commit,omitempty"`
	JobID       string    `json:"job_id,omitempty"`
	// Failed: the job failed; files from before failed nights were kept
	// hold passed nights only, and read the same.
	Failed  bool            `json:"failed,omitempty"`
	Summary json.RawMessage `json:"summary"`
	// Outcomes are kept for the nights a baseline_from gate may pair with.
	Outcomes []Outcomes `json:"outcomes,omitempty"`
}

// FileMiss is a Miss as written.
type FileMiss struct {
	BuildNumber int        `json:"build_number"`
	BuildURL    string     `json:"build_url,omitempty"`
	CreatedAt   time.Time  `json:"created_at,omitzero"`
	Reason      MissReason `json:"reason"`
	Detail      string     `json:"detail,omitempty"`
}

// Record stores what a Source answered for recipe: its nights, its
// misses and, when it failed, why.
func (f *File) Record(recipe, stepKey string, asked int, r Result, err error) {
	if f.Recipes == nil {
		f.Recipes = map[string]FileRecipe{}
	}
	fr := FileRecipe{StepKey: stepKey, Asked: asked, Nights: []FileNight{}}
	for _, n := range r.Nights {
		fr.Nights = append(fr.Nights, FileNight{BuildNumber: n.BuildNumber, BuildURL: n.BuildURL, CreatedAt: n.CreatedAt, Commit: n.Commit, JobID: n.JobID, Failed: n.Failed, Summary: json.RawMessage(n.Summary), Outcomes: n.Outcomes})
	}
	for _, m := range r.Missed {
		fr.Missed = append(fr.Missed, FileMiss(m))
	}
	// No completed night yet (a new recipe) is an answer, not a failure:
	// the file holds none, and the gates say "first nights".
	if err != nil && !errors.Is(err, ErrNoNights) {
		fr.Error = err.Error()
	}
	f.Recipes[recipe] = fr
}

// WriteFile writes f as indented JSON.
func (f *File) WriteFile(path string) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// WriteDir writes f into dir as the history step uploads it: every
// recipe in contract.HistoryArtifact's name, for the next build to start
// from, and each recipe alone in its contract.HistoryFile, which is all a
// GPU job downloads. dir stands for contract.HistoryDir.
func (f *File) WriteDir(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "recipes"), 0o755); err != nil {
		return fmt.Errorf("create history directory: %w", err)
	}
	if err := f.WriteFile(filepath.Join(dir, path.Base(contract.HistoryArtifact))); err != nil {
		return err
	}
	for name, fr := range f.Recipes {
		one := File{Version: f.Version, BuildNumber: f.BuildNumber, FetchedAt: f.FetchedAt, Recipes: map[string]FileRecipe{name: fr}}
		if err := one.WriteFile(filepath.Join(dir, "recipes", path.Base(contract.HistoryFile(name)))); err != nil {
			return err
		}
	}
	return nil
}

// ReadFile reads a history file; an unknown version is an error.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	if f.Version != FileVersion {
		return nil, fmt.Errorf("history %s: version %d, this runner reads %d", path, f.Version, FileVersion)
	}
	return &f, nil
}

// FileSource is a Source over the history file at path, read once when
// first asked. A file that cannot be read makes every answer
// ErrNoBaseline with the reason: the gates then warn, they do not crash.
func FileSource(path string) Source {
	return &fileSource{path: path}
}

type fileSource struct {
	path string
	once sync.Once
	f    *File
	err  error
}

// Last answers from the file: up to n of the nights it holds for recipe.
// A recipe it does not hold, or holds fewer nights of than asked while
// the fetch stopped short, is told as such.
func (s *fileSource) Last(_ context.Context, recipe, stepKey string, n int) (Result, error) {
	s.once.Do(func() { s.f, s.err = ReadFile(s.path) })
	if s.err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrNoBaseline, s.err)
	}
	fr, ok := s.f.Recipes[recipe]
	if !ok {
		return Result{}, fmt.Errorf("%w: the build's history holds no nights of %s (the history step was not asked for them)", ErrNoBaseline, recipe)
	}
	if fr.StepKey != "" && fr.StepKey != stepKey {
		return Result{}, fmt.Errorf("%w: the build's history of %s is of step %q, not %q", ErrNoBaseline, recipe, fr.StepKey, stepKey)
	}
	var res Result
	for _, m := range fr.Missed {
		res.Missed = append(res.Missed, Miss(m))
	}
	for _, night := range fr.Nights {
		if len(res.Nights) == n {
			break
		}
		res.Nights = append(res.Nights, Night{BuildNumber: night.BuildNumber, BuildURL: night.BuildURL, CreatedAt: night.CreatedAt, Commit: night.Commit, Summary: []byte(night.Summary), JobID: night.JobID, Failed: night.Failed, Outcomes: night.Outcomes})
	}
	switch {
	case fr.Error != "":
		return res, fmt.Errorf("%w: the history step could not fetch %s: %s", ErrNoBaseline, recipe, fr.Error)
	case len(res.Nights) == 0:
		return res, fmt.Errorf("%w: %w: the build's history holds no completed night of %s", ErrNoBaseline, ErrNoNights, recipe)
	}
	return res, nil
}
