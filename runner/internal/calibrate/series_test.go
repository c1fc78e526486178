package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSeries(t *testing.T, all []Series) string {
	t.Helper()
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "series.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func noiseSeries(seed uint64, n int, level, cv float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = level * math.Exp(cv*rng.NormFloat64())
	}
	return out
}

func TestReadSeriesErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct{ name, text, want string }{
		{"syntax", "[\n{\"name\": \"a\",\n \"values\": [1, 2,]}]", "series.json:3: "},
		{"type", `[{"name": "a", "values": ["x"]}]`, "series.json:1: "},
		{"unknown field", `[{"name": "a", "values": [1], "valus": [1]}]`, `unknown field "valus"`},
		{"empty", `[]`, "no series"},
		{"no name", `[{"values": [1]}]`, "series 1 (\"\"): has no name"},
		{"bad value", `[{"name": "a", "values": [1, 0]}]`, `series 1 ("a"): value 1 is 0; values must be positive`},
		{"known outside", `[{"name": "a", "values": [1, 2], "known": [5]}]`, "known change at night 5 is outside its 2 nights"},
		{"reruns short", `[{"name": "a", "values": [1, 2], "reruns": [[1]]}]`, "1 reruns for 2 values"},
		{"two values", `[{"name": "a", "values": [1]}] []`, "more than one JSON value"},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, tt.name, "series.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadSeries(path)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: ReadSeries() error = %v, want it to name %s and contain %q", tt.name, err, path, tt.want)
		}
	}
	// Through the command: a usage error, nothing on stdout.
	var out bytes.Buffer
	err := command(context.Background(), []string{"--series", filepath.Join(dir, "empty", "series.json"), "--json"}, noEnv, &out, io.Discard)
	if !errors.Is(err, ErrUsage) || out.Len() != 0 {
		t.Errorf("--series of an empty file: error %v, stdout %q; want a usage error and no output", err, out.String())
	}
}

// A replay prints a night per line, judged from the fifth; a regression
// that stays stays red past the night its good nights leave the 30-night
// history, and says since when and against what.
func TestReplayCarriesTheRegression(t *testing.T) {
	t.Parallel()
	v := append(noiseSeries(1, 40, 100, 0.01), noiseSeries(2, 45, 106, 0.01)...) // lower is better: 6 % slower
	path := writeSeries(t, []Series{{Name: "set/a", Values: v}})
	var out, summary bytes.Buffer
	if err := command(context.Background(), []string{"--series", path, "--json"}, noEnv, &out, &summary); err != nil {
		t.Fatal(err)
	}
	var rows []NightResult
	dec := json.NewDecoder(&out)
	for dec.More() {
		var r NightResult
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) != len(v) || rows[4].Judged || !rows[5].Judged || rows[0].Series != "set/a" || rows[10].Value != v[10] {
		t.Fatalf("%d rows, night 4 judged %v, night 5 judged %v; want one a night, judged from the fifth", len(rows), rows[4].Judged, rows[5].Judged)
	}
	red := 0
	for _, r := range rows[41:] {
		if r.Flagged {
			red++
		}
	}
	last := rows[len(rows)-1]
	if red < 42 || !last.Open || last.OpenSince == nil || *last.OpenSince > 41 || math.Abs(last.OpenLevel-100) > 1.5 || last.Rule != "open-regression" {
		t.Errorf("red on %d of the 44 nights after the first; last night open %v since %v at %v, rule %q: %s", red, last.Open, last.OpenSince, last.OpenLevel, last.Rule, last.Why)
	}
	for _, want := range []string{"set ", "judged nights", "one-night episodes", "\nset  ", "\nall  "} {
		if !strings.Contains(summary.String(), want) {
			t.Errorf("summary on stderr =\n%s\nwant it to contain %q", summary.String(), want)
		}
	}
}

// --check measures the three figures per set and over all, and a series
// too short for steps gets none.
func TestCheck(t *testing.T) {
	t.Parallel()
	var all []Series
	for i := range 4 {
		all = append(all, Series{Name: "lab/s" + string(rune('a'+i)), Values: noiseSeries(uint64(10+i), 160, 50, 0.02), HigherIsBetter: i%2 == 0})
	}
	all = append(all, Series{Name: "short/x", Values: noiseSeries(20, 60, 5, 0.02)})
	path := writeSeries(t, all)
	var out bytes.Buffer
	err := command(context.Background(), []string{"--series", path, "--check", "--json"}, noEnv, &out, io.Discard)
	var rows []checkResult
	dec := json.NewDecoder(&out)
	for dec.More() {
		var r checkResult
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) != 3 || rows[0].Set != "lab" || rows[1].Set != "short" || rows[2].Set != "all" {
		t.Fatalf("rows = %+v, want lab, short, all", rows)
	}
	if rows[0].Steps != 8 || rows[1].Steps != 0 || rows[2].ShuffledJudged != 4*155+55 {
		t.Errorf("steps %d and %d, shuffled nights %d; want 8, 0 and %d", rows[0].Steps, rows[1].Steps, rows[2].ShuffledJudged, 4*155+55)
	}
	// Log-normal noise of its own: few false alarms, most steps caught
	// and held red; the exit status says whether every target was met.
	if r := rows[2]; r.ShuffledRate > 0.01 || r.Power < 0.75 || r.StaysRed < 0.75 || (err == nil) != r.Met || err != nil && !errors.Is(err, ErrTargets) {
		t.Errorf("--check on log-normal noise: %v, %+v", err, r)
	}
	// Text: the table, with the targets named.
	var text bytes.Buffer
	if err := command(context.Background(), []string{"--series", path, "--check"}, noEnv, &text, io.Discard); err != nil && !errors.Is(err, ErrTargets) {
		t.Fatal(err)
	}
	for _, want := range []string{"shuffled nights flagged (≤ 1%)", "steps caught within two nights (≥ 80%)", "red after the catch (≥ 90%)", "\nlab  "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("--check printed\n%s\nwant it to contain %q", text.String(), want)
		}
	}
	if err := command(context.Background(), []string{"--check"}, noEnv, io.Discard, io.Discard); !errors.Is(err, ErrUsage) {
		t.Errorf("--check without --series: %v, want a usage error", err)
	}
}

func TestShuffledAndStepTrial(t *testing.T) {
	t.Parallel()
	s := Series{Name: "x", Values: []float64{1, 2, 3, 4, 5, 6}, Known: []int{3}, Reruns: [][]float64{{1}, {2}, {3}, {4}, {5}, {6}}}
	sh := shuffled(s, 1)
	if sh.Known != nil || len(sh.Values) != 6 {
		t.Errorf("shuffled = %+v, want the nights without known changes", sh)
	}
	for i, v := range sh.Values {
		if sh.Reruns[i][0] != v {
			t.Errorf("night %d: value %v moved without its reruns %v", i, v, sh.Reruns[i])
		}
	}
	v := noiseSeries(3, 200, 10, 0.02)
	st := stepTrial(Series{Name: "y", Values: v}, 50)
	sigma := robustSDOf(logsOf(v[:50]))
	if len(st.Values) != 95 || math.Abs(math.Log(st.Values[60]/v[60])-3*sigma) > 1e-9 || st.Values[49] != v[49] {
		t.Errorf("stepTrial: %d nights, night 60 ×%v; want 95 nights and ×e^(3σ) (σ %v) from night 50", len(st.Values), st.Values[60]/v[60], sigma)
	}
}

func logsOf(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Log(x)
	}
	return out
}
