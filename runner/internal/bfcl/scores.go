package bfcl

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// versionPrefix starts BFCL's data, result and score file names.
const versionPrefix = "BFCL_v4"

// Score is one accuracy BFCL reported, as a fraction.
type Score struct {
	Category string
	Acc      float64
	// Source is where it was read, relative to the project root: a CSV
	// file and column, or a score JSON file.
	Source string
}

// Result is what one category run produced.
type Result struct {
	Plan  Plan
	Score Score
	// Sub holds each leaf of a group, in Plan.Leaves order; nil for a leaf.
	Sub []Score
	// Entries counts the generated test entries per leaf.
	Entries map[string]int
	// InferenceErrors counts entries whose request failed; BFCL records
	// the error as the answer and scores it wrong.
	InferenceErrors     int
	FirstInferenceError string
}

// Total is the number of generated test entries.
func (r *Result) Total() int {
	n := 0
	for _, c := range r.Entries {
		n += c
	}
	return n
}

// The score CSV files under <root>/score, by BFCL's grouping of leaves.
var csvByGrouping = map[string]string{
	"non_live":   "data_non_live.csv",
	"live":       "data_live.csv",
	"multi_turn": "data_multi_turn.csv",
	"agentic":    "data_agentic.csv",
}

// column is where a score sits in BFCL's CSVs at Version
// (eval_checker/eval_runner_helper.py generate_leaderboard_csv).
type column struct{ file, header string }

var groupColumns = map[string]column{
	"all":         {"data_overall.csv", "Overall Acc"},
	"all_scoring": {"data_overall.csv", "Overall Acc"},
	"non_live":    {"data_non_live.csv", "Non-Live Overall Acc"},
	"live":        {"data_live.csv", "Live Overall Acc"},
	"multi_turn":  {"data_multi_turn.csv", "Multi Turn Overall Acc"},
	"agentic":     {"data_agentic.csv", "Agentic Overall Acc"},
	"web_search":  {"data_agentic.csv", "Web Search Summary"},
	"memory":      {"data_agentic.csv", "Memory Summary"},
}

var leafHeaders = map[string]string{
	"simple_python":           "Python Simple AST",
	"simple_java":             "Java Simple AST",
	"simple_javascript":       "JavaScript Simple AST",
	"multiple":                "Multiple AST",
	"parallel":                "Parallel AST",
	"parallel_multiple":       "Parallel Multiple AST",
	"irrelevance":             "Irrelevance Detection",
	"live_simple":             "Python Simple AST",
	"live_multiple":           "Python Multiple AST",
	"live_parallel":           "Python Parallel AST",
	"live_parallel_multiple":  "Python Parallel Multiple AST",
	"live_irrelevance":        "Irrelevance Detection",
	"live_relevance":          "Relevance Detection",
	"multi_turn_base":         "Base",
	"multi_turn_miss_func":    "Miss Func",
	"multi_turn_miss_param":   "Miss Param",
	"multi_turn_long_context": "Long Context",
	"web_search_base":         "Web Search Base",
	"web_search_no_snippet":   "Web Search No Snippet",
	"memory_kv":               "Memory KV",
	"memory_vector":           "Memory Vector",
	"memory_rec_sum":          "Memory Recursive Summarization",
}

// grouping is bfcl_eval.utils.get_general_grouping for a leaf.
func grouping(leaf string) string {
	switch {
	case strings.Contains(leaf, "multi_turn"):
		return "multi_turn"
	case strings.Contains(leaf, "web_search"), strings.Contains(leaf, "memory"):
		return "agentic"
	case strings.Contains(leaf, "live"):
		return "live"
	}
	return "non_live"
}

// ReadResult reads what the run of job left in its project root: the
// scores of the category and of each leaf of a group, and the generated
// entries. A missing score is an error naming the category and every file
// looked at; so is a run whose every request failed.
func ReadResult(job *Job) (*Result, error) {
	p := job.Plan
	res := &Result{Plan: p, Entries: map[string]int{}}
	if err := res.countEntries(job); err != nil {
		return nil, err
	}
	sc := &scoreReader{root: job.Root, model: job.Model, csvs: map[string]*csvTable{}}
	var missing []string
	if p.IsGroup() {
		col := groupColumns[p.Category]
		s, why := sc.fromCSV(p.Category, col)
		if why != "" {
			missing = append(missing, fmt.Sprintf("bfcl %s: no score: looked at %s", p.Category, why))
		}
		res.Score = s
		for _, leaf := range p.Leaves {
			s, err := sc.leaf(leaf)
			if err != nil {
				missing = append(missing, fmt.Sprintf("bfcl %s: sub-category %s: %v", p.Category, leaf, err))
				continue
			}
			res.Sub = append(res.Sub, s)
		}
	} else {
		s, err := sc.leaf(p.Category)
		if err != nil {
			missing = append(missing, fmt.Sprintf("bfcl %s: %v", p.Category, err))
		}
		res.Score = s
	}
	if len(missing) > 0 {
		return nil, errors.New(strings.Join(missing, "; "))
	}
	return res, nil
}

// countEntries reads BFCL's result files, one JSON object a line per
// test entry, and checks a subsampled run generated what it was told.
func (r *Result) countEntries(job *Job) error {
	p := job.Plan
	want := map[string][]string{}
	if p.Subsampled() {
		b, err := os.ReadFile(filepath.Join(job.Root, "test_case_ids_to_generate.json"))
		if err != nil {
			return fmt.Errorf("bfcl %s: the subsampled run left no test id file: %w", p.Category, err)
		}
		if err := json.Unmarshal(b, &want); err != nil {
			return fmt.Errorf("bfcl %s: test_case_ids_to_generate.json: %w", p.Category, err)
		}
	}
	files := findFiles(filepath.Join(job.Root, "result"), func(leaf string) string { return versionPrefix + "_" + leaf + "_result.json" }, p.Leaves)
	for _, leaf := range p.Leaves {
		path, ok := files[leaf]
		if !ok {
			return fmt.Errorf("bfcl %s: BFCL wrote no results for %s (no result/**/%s_%s_result.json)", p.Category, leaf, versionPrefix, leaf)
		}
		n, errs, first, err := readResultFile(path)
		if err != nil {
			return fmt.Errorf("bfcl %s: %w", p.Category, err)
		}
		r.Entries[leaf] = n
		r.InferenceErrors += errs
		if r.FirstInferenceError == "" {
			r.FirstInferenceError = first
		}
		if p.Subsampled() && n != len(want[leaf]) {
			return fmt.Errorf("bfcl %s: %s has %d results, but %d test entries were asked for", p.Category, leaf, n, len(want[leaf]))
		}
	}
	if total := r.Total(); total > 0 && r.InferenceErrors == total {
		return fmt.Errorf("bfcl %s: every one of %d test entries failed at inference; first: %s", p.Category, total, r.FirstInferenceError)
	}
	return nil
}

// inferenceErrorPrefix starts the answer BFCL records for a failed request.
const inferenceErrorPrefix = "Error during inference"

func readResultFile(path string) (n, errs int, first string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 256<<20)
	for line := 1; s.Scan(); line++ {
		if strings.TrimSpace(s.Text()) == "" {
			continue
		}
		var e struct {
			ID     string          `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			return 0, 0, "", fmt.Errorf("%s:%d: %w", path, line, err)
		}
		n++
		var text string
		if json.Unmarshal(e.Result, &text) == nil && strings.HasPrefix(text, inferenceErrorPrefix) {
			errs++
			if first == "" {
				first = e.ID + ": " + text
			}
		}
	}
	if err := s.Err(); err != nil {
		return 0, 0, "", fmt.Errorf("%s: %w", path, err)
	}
	return n, errs, first, nil
}

// findFiles finds, for each leaf, the first file under dir named name(leaf).
func findFiles(dir string, name func(string) string, leaves []string) map[string]string {
	byName := map[string]string{}
	for _, leaf := range leaves {
		byName[name(leaf)] = leaf
	}
	found := map[string]string{}
	var paths []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if _, ok := byName[d.Name()]; ok {
				paths = append(paths, path)
			}
		}
		return nil
	})
	sort.Strings(paths)
	for _, path := range paths {
		leaf := byName[filepath.Base(path)]
		if _, done := found[leaf]; !done {
			found[leaf] = path
		}
	}
	return found
}

type scoreReader struct {
	root, model string
	csvs        map[string]*csvTable
}

type csvTable struct {
	header []string
	rows   [][]string
	err    error
}

func (sc *scoreReader) table(file string) *csvTable {
	if t, ok := sc.csvs[file]; ok {
		return t
	}
	t := &csvTable{}
	sc.csvs[file] = t
	f, err := os.Open(filepath.Join(sc.root, "score", file))
	if err != nil {
		t.err = err
		return t
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.err = err
		return t
	}
	if len(recs) == 0 {
		t.err = errors.New("empty file")
		return t
	}
	t.header, t.rows = recs[0], recs[1:]
	return t
}

// fromCSV reads category's column of the model's row; why says what was
// looked at when there is no score.
func (sc *scoreReader) fromCSV(category string, col column) (Score, string) {
	rel := filepath.Join("score", col.file)
	t := sc.table(col.file)
	if t.err != nil {
		return Score{}, fmt.Sprintf("%s (%v)", rel, unwrapPath(t.err))
	}
	idx := -1
	token := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(versionPrefix+"_"+category) + `($|[^A-Za-z0-9_])`)
	for i, h := range t.header {
		if token.MatchString(h) {
			idx = i
			break
		}
	}
	header := col.header
	if idx < 0 {
		for i, h := range t.header {
			if h == col.header {
				idx = i
				break
			}
		}
	} else {
		header = t.header[idx]
	}
	if idx < 0 {
		return Score{}, fmt.Sprintf("%s (no column %q or one naming %s_%s)", rel, col.header, versionPrefix, category)
	}
	modelIdx := -1
	for i, h := range t.header {
		if h == "Model" {
			modelIdx = i
		}
	}
	if modelIdx < 0 {
		return Score{}, fmt.Sprintf("%s (no Model column)", rel)
	}
	alt := strings.ReplaceAll(sc.model, "/", "_")
	for _, row := range t.rows {
		if len(row) <= idx || len(row) <= modelIdx || (row[modelIdx] != sc.model && row[modelIdx] != alt) {
			continue
		}
		v := strings.TrimSpace(row[idx])
		if v == "N/A" {
			return Score{}, fmt.Sprintf("%s (column %q is N/A for model %q)", rel, header, sc.model)
		}
		pct, ok := strings.CutSuffix(v, "%")
		// "66.67e-2" parses to the float nearest 0.6667; dividing by 100
		// would not.
		f, err := strconv.ParseFloat(pct+"e-2", 64)
		if !ok || err != nil || f < 0 || f > 1 {
			return Score{}, fmt.Sprintf("%s (column %q holds %q for model %q, not a percentage)", rel, header, v, sc.model)
		}
		return Score{Category: category, Acc: f, Source: rel + ": " + header}, ""
	}
	return Score{}, fmt.Sprintf("%s (no row for model %q)", rel, sc.model)
}

// leaf reads a leaf's score from its CSV column, else from the first line
// of its score JSON file.
func (sc *scoreReader) leaf(leaf string) (Score, error) {
	s, whyCSV := sc.fromCSV(leaf, column{csvByGrouping[grouping(leaf)], leafHeaders[leaf]})
	if whyCSV == "" {
		return s, nil
	}
	name := versionPrefix + "_" + leaf + "_score.json"
	pattern := filepath.Join("score", "**", name)
	path, ok := findFiles(filepath.Join(sc.root, "score"), func(string) string { return name }, []string{leaf})[leaf]
	if !ok {
		return Score{}, fmt.Errorf("no score: looked at %s and %s (none found)", whyCSV, pattern)
	}
	rel, _ := filepath.Rel(sc.root, path)
	f, err := os.Open(path)
	if err != nil {
		return Score{}, fmt.Errorf("no score: looked at %s and %s (%v)", whyCSV, rel, unwrapPath(err))
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return Score{}, fmt.Errorf("no score: looked at %s and %s (empty)", whyCSV, rel)
	}
	var head struct {
		Accuracy *float64 `json:"accuracy"`
	}
	if err := json.Unmarshal(line, &head); err != nil || head.Accuracy == nil || *head.Accuracy < 0 || *head.Accuracy > 1 {
		return Score{}, fmt.Errorf("no score: looked at %s and %s (first line has no accuracy from 0 to 1)", whyCSV, rel)
	}
	return Score{Category: leaf, Acc: *head.Accuracy, Source: rel}, nil
}

// unwrapPath drops the absolute path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
