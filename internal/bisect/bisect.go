// Package bisect finds the vLLM commit that caused a confirmed regression
// without a person: it lists the nightly images between the last good and
// the first bad night, and tests their midpoints one build at a time. Its
// state travels from build to build in the build's environment
// (BENCHKITE_BISECT), so no build needs to remember another.
package bisect

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Env is the build environment variable that carries a bisect's State.
const Env = "BENCHKITE_BISECT"

// Candidate is one vLLM commit the registry has an image for.
type Candidate struct {
	Commit  string    `json:"commit"`
	Created time.Time `json:"created"`
}

// Tested is one bisect build's judgement of a candidate. An
// inconclusive build (its run failed or could not be checked) judged
// nothing: Why says so, and the commit is tested again once.
type Tested struct {
	Commit       string  `json:"commit"`
	Build        int     `json:"build"`
	Value        float64 `json:"value"`
	Bad          bool    `json:"bad"`
	Inconclusive bool    `json:"inconclusive,omitempty"`
	Why          string  `json:"why,omitempty"`
}

// Regime is what a tested commit is judged against: the good regime's
// nights (oldest first), their known change points and the detector's
// settings, as the night that found the regression judged it.
type Regime struct {
	Nights         []float64 `json:"nights"`
	Known          []int     `json:"known,omitempty"`
	HigherIsBetter bool      `json:"higher_is_better"`
	FloorPct       float64   `json:"floor_pct"`
}

// State is a bisect between a last good and a first bad commit.
// Candidates are the images after Good up to and including Bad, oldest
// first; Lo is the index of the newest known good (-1: Good itself) and
// Hi of the oldest known bad.
type State struct {
	Recipe string `json:"recipe"`
	// Subject and Metric name the regression gate that found it (a bench
	// run and its metric); GoodValue and BadValue are the series' means
	// before and after the change point, shown beside the tested values;
	// Regime is what judges them.
	Subject    string      `json:"subject"`
	Metric     string      `json:"metric"`
	GoodValue  float64     `json:"good_value"`
	BadValue   float64     `json:"bad_value"`
	Regime     Regime      `json:"regime"`
	Good       string      `json:"good"`
	Bad        string      `json:"bad"`
	Candidates []Candidate `json:"candidates"`
	Lo         int         `json:"lo"`
	Hi         int         `json:"hi"`
	// Origin is the build that found the regression.
	Origin int `json:"origin_build"`
	// BudgetGPUHours bounds the GPU time all bisect builds may take (0:
	// no bound); UsedGPUHours is what they took so far.
	BudgetGPUHours float64  `json:"budget_gpu_h,omitempty"`
	UsedGPUHours   float64  `json:"used_gpu_h"`
	Tested         []Tested `json:"tested,omitempty"`
	// Stopped says why the bisect ended before one commit remained.
	Stopped string `json:"stopped,omitempty"`
}

// Start is a new bisect over candidates, which end with the bad commit.
func Start(recipe, metric, good, bad string, candidates []Candidate, origin int, budget float64) (State, error) {
	if len(candidates) == 0 || !sameCommit(candidates[len(candidates)-1].Commit, bad) {
		return State{}, fmt.Errorf("bisect %s: the candidates must end with the first bad commit %s", recipe, bad)
	}
	return State{Recipe: recipe, Metric: metric, Good: good, Bad: bad, Candidates: candidates,
		Lo: -1, Hi: len(candidates) - 1, Origin: origin, BudgetGPUHours: budget}, nil
}

// MaxBuilds is the most builds a bisect over n candidates takes:
// ⌈log2 n⌉ + 1.
func MaxBuilds(n int) int {
	if n <= 1 {
		return 1
	}
	return int(math.Ceil(math.Log2(float64(n)))) + 1
}

// Done says whether one commit remains: the first bad one.
func (s State) Done() bool { return s.Hi-s.Lo <= 1 }

// Over says whether the bisect ended: done, or stopped.
func (s State) Over() bool { return s.Done() || s.Stopped != "" }

// FirstBad is the commit the bisect found, "" before it is done.
func (s State) FirstBad() string {
	if !s.Done() {
		return ""
	}
	return s.Candidates[s.Hi].Commit
}

// ErrBudget: the bisect's GPU-hour budget or its build bound is spent.
var ErrBudget = errors.New("bisect budget spent")

// Next is the commit to test next, the midpoint of what is left.
func (s State) Next() (string, error) {
	if s.Done() {
		return "", errors.New("bisect is done")
	}
	if s.Stopped != "" {
		return "", errors.New("bisect stopped: " + s.Stopped)
	}
	if s.BudgetGPUHours > 0 && s.UsedGPUHours >= s.BudgetGPUHours {
		return "", fmt.Errorf("%w: %.1f of %.1f GPU-h used", ErrBudget, s.UsedGPUHours, s.BudgetGPUHours)
	}
	if len(s.Tested) >= MaxBuilds(len(s.Candidates)) {
		return "", fmt.Errorf("%w: %d builds", ErrBudget, len(s.Tested))
	}
	return s.Candidates[s.mid()].Commit, nil
}

func (s State) mid() int { return s.Lo + (s.Hi-s.Lo)/2 }

// Record is a bisect build's judgement of commit: bad moves the bad end
// down to it, good moves the good end up. gpuHours is what the build took.
func (s State) Record(commit string, build int, value float64, bad bool, gpuHours float64) (State, error) {
	if err := s.atMidpoint(commit, build); err != nil {
		return s, err
	}
	i := s.mid()
	s.Tested = append(s.Tested, Tested{Commit: commit, Build: build, Value: value, Bad: bad})
	s.UsedGPUHours += gpuHours
	if bad {
		s.Hi = i
	} else {
		s.Lo = i
	}
	return s, nil
}

// Inconclusive records a build that could not judge commit, for why. The
// commit is tested again once; a second inconclusive build of it stops
// the bisect rather than guess, with the range it narrowed down to.
func (s State) Inconclusive(commit string, build int, why string, gpuHours float64) (State, error) {
	if err := s.atMidpoint(commit, build); err != nil {
		return s, err
	}
	before := 0
	for _, t := range s.Tested {
		if t.Inconclusive && sameCommit(t.Commit, commit) {
			before++
		}
	}
	s.Tested = append(s.Tested, Tested{Commit: commit, Build: build, Inconclusive: true, Why: why})
	s.UsedGPUHours += gpuHours
	if before > 0 {
		s.Stopped = fmt.Sprintf("vLLM %s could not be judged twice (build #%d: %s)", short(commit), build, why)
	}
	return s, nil
}

func (s State) atMidpoint(commit string, build int) error {
	if s.Over() {
		return fmt.Errorf("bisect %s: build #%d tested %s, but the bisect is over", s.Recipe, build, commit)
	}
	if i := s.mid(); !sameCommit(s.Candidates[i].Commit, commit) {
		return fmt.Errorf("bisect %s: build #%d tested %s, but the midpoint is %s", s.Recipe, build, commit, s.Candidates[i].Commit)
	}
	return nil
}

// Encode is s as the build environment carries it.
func (s State) Encode() (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode bisect state: %w", err)
	}
	return string(b), nil
}

// Decode reads a State from Env, checking that it is one.
func Decode(v string) (State, error) {
	var s State
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return State{}, fmt.Errorf("%s: %w", Env, err)
	}
	if s.Recipe == "" || len(s.Candidates) == 0 || s.Lo < -1 || s.Hi >= len(s.Candidates) || s.Lo >= s.Hi {
		return State{}, fmt.Errorf("%s: not a bisect in progress (recipe %q, %d candidates, lo %d, hi %d)", Env, s.Recipe, len(s.Candidates), s.Lo, s.Hi)
	}
	if len(s.Regime.Nights) == 0 {
		return State{}, fmt.Errorf("%s: bisect of %s carries no good regime to judge by", Env, s.Recipe)
	}
	return s, nil
}

// sameCommit says whether two commits, either possibly abbreviated, name
// the same one.
func sameCommit(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return b[:len(a)] == a
}
