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

// Tested is one bisect build's judgement of a candidate.
type Tested struct {
	Commit string  `json:"commit"`
	Build  int     `json:"build"`
	Value  float64 `json:"value"`
	Bad    bool    `json:"bad"`
}

// State is a bisect between a last good and a first bad commit.
// Candidates are the images after Good up to and including Bad, oldest
// first; Lo is the index of the newest known good (-1: Good itself) and
// Hi of the oldest known bad.
type State struct {
	Recipe string `json:"recipe"`
	// Subject and Metric name the regression gate that found it (a bench
	// run and its metric); GoodValue and BadValue are the series' means
	// before and after the change point, the two regimes a tested
	// commit's value is judged between.
	Subject    string      `json:"subject"`
	Metric     string      `json:"metric"`
	GoodValue  float64     `json:"good_value"`
	BadValue   float64     `json:"bad_value"`
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
}

// Start is a new bisect over candidates, which end with the bad commit.
func Start(recipe, metric, good, bad string, candidates []Candidate, origin int, budget float64) (State, error) {
	if len(candidates) == 0 || !sameCommit(candidates[len(candidates)-1].Commit, bad) {
		return State{}, fmt.Errorf("bisect %s: the candidates must end with the first bad commit %s", recipe, bad)
	}
	return State{Recipe: recipe, Metric: metric, Good: good, Bad: bad, Candidates: candidates,
		Lo: -1, Hi: len(candidates) - 1, Origin: origin, BudgetGPUHours: budget}, nil
}

// Judge says whether value belongs to the bad regime: nearer the bad
// mean than the good one. Between two regimes the detector already told
// apart, the nearer one is the judgement the detector would make.
func (s State) Judge(value float64) bool {
	return math.Abs(value-s.BadValue) < math.Abs(value-s.GoodValue)
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
	i := s.mid()
	if s.Done() || !sameCommit(s.Candidates[i].Commit, commit) {
		return s, fmt.Errorf("bisect %s: build #%d tested %s, but the midpoint is %s", s.Recipe, build, commit, s.Candidates[i].Commit)
	}
	s.Tested = append(s.Tested, Tested{Commit: commit, Build: build, Value: value, Bad: bad})
	s.UsedGPUHours += gpuHours
	if bad {
		s.Hi = i
	} else {
		s.Lo = i
	}
	return s, nil
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
