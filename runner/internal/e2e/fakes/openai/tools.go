package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ToolAnswers is the answer key of function-calling questions: for each
// question (the messages of its first turn), the calls a right answer
// makes. LoadBFCLAnswers reads it from the data a bfcl-eval wheel ships.
type ToolAnswers struct {
	byPrompt map[string][]toolEntry
	entries  int
}

// toolEntry is one test entry: its id and its expected calls.
type toolEntry struct {
	id    string
	calls []expectedCall
	funcs []string // the names of the functions the entry offers
}

// expectedCall is one call of a ground truth: for each parameter, the
// values BFCL accepts ("" marks an optional parameter that may be left
// out), kept as JSON text so numbers keep their spelling.
type expectedCall struct {
	name   string
	params map[string][]json.RawMessage
}

// Len is the number of entries in the key.
func (a *ToolAnswers) Len() int { return a.entries }

// LoadBFCLAnswers reads every single-turn category of a bfcl_eval data
// directory (BFCL_v4_<category>.json beside possible_answer/): the
// categories whose ground truth is a list of calls with accepted values,
// as BFCL's AST checker reads them. Multi-turn and relevance categories,
// whose answers are judged otherwise, are left out.
func LoadBFCLAnswers(dataDir string) (*ToolAnswers, error) {
	answers, err := filepath.Glob(filepath.Join(dataDir, "possible_answer", "BFCL_v4_*.json"))
	if err != nil {
		return nil, err
	}
	if len(answers) == 0 {
		return nil, fmt.Errorf("bfcl answers: no possible_answer/BFCL_v4_*.json under %s", dataDir)
	}
	key := &ToolAnswers{byPrompt: map[string][]toolEntry{}}
	for _, path := range answers {
		truth, err := readGroundTruth(path)
		if err != nil {
			return nil, err
		}
		if truth == nil {
			continue // not an AST category
		}
		questions := filepath.Join(dataDir, filepath.Base(path))
		if err := key.addQuestions(questions, truth); err != nil {
			return nil, err
		}
	}
	if key.entries == 0 {
		return nil, fmt.Errorf("bfcl answers: no single-turn entry under %s", dataDir)
	}
	return key, nil
}

// readGroundTruth reads one possible_answer file into id -> calls, or nil
// when its ground truth is not a list of calls (multi-turn).
func readGroundTruth(path string) (map[string][]expectedCall, error) {
	out := map[string][]expectedCall{}
	err := eachJSONLine(path, func(line []byte) error {
		var row struct {
			ID          string            `json:"id"`
			GroundTruth []json.RawMessage `json:"ground_truth"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			return err
		}
		var calls []expectedCall
		for _, raw := range row.GroundTruth {
			var call map[string]map[string][]json.RawMessage
			if err := json.Unmarshal(raw, &call); err != nil || len(call) != 1 {
				return errNotAST
			}
			for name, params := range call {
				calls = append(calls, expectedCall{name: name, params: params})
			}
		}
		out[row.ID] = calls
		return nil
	})
	if err == errNotAST {
		return nil, nil
	}
	return out, err
}

var errNotAST = fmt.Errorf("not a list of calls")

func (a *ToolAnswers) addQuestions(path string, truth map[string][]expectedCall) error {
	return eachJSONLine(path, func(line []byte) error {
		var row struct {
			ID       string          `json:"id"`
			Question [][]chatMessage `json:"question"`
			Function []struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			return err
		}
		calls, ok := truth[row.ID]
		if !ok || len(row.Question) != 1 {
			return nil
		}
		e := toolEntry{id: row.ID, calls: calls}
		for _, f := range row.Function {
			e.funcs = append(e.funcs, f.Name)
		}
		k, err := promptKey(row.Question[0])
		if err != nil {
			return fmt.Errorf("%s: %w", row.ID, err)
		}
		a.byPrompt[k] = append(a.byPrompt[k], e)
		a.entries++
		return nil
	})
}

func eachJSONLine(path string, f func([]byte) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("bfcl answers: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := f(line); err != nil {
			if err == errNotAST {
				return err
			}
			return fmt.Errorf("bfcl answers: %s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// promptKey is the identity of a conversation's first turn: each
// message's role and text.
func promptKey(msgs []chatMessage) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		text, err := messageText(m.Content)
		if err != nil {
			return "", err
		}
		b.WriteString(m.Role)
		b.WriteByte(0)
		b.WriteString(text)
		b.WriteByte(0)
	}
	return b.String(), nil
}

// offeredTool is one tool of a request, as far as answering needs it.
type offeredTool struct {
	Type     string `json:"type"`
	Function struct {
		Name       string `json:"name"`
		Parameters struct {
			Properties map[string]struct {
				Type  string `json:"type"`
				Items *struct {
					Type string `json:"type"`
				} `json:"items"`
			} `json:"properties"`
		} `json:"parameters"`
	} `json:"function"`
}

// ToolCall is a call the server makes: a function name and its arguments
// as a JSON object.
type ToolCall struct {
	Name      string
	Arguments string
}

// IsToolCallAnsweredCorrectly reports whether the server calls the right
// functions with right arguments for the test entry id at the given
// accuracy; like IsAnsweredCorrectly, stable across runs and processes.
func IsToolCallAnsweredCorrectly(id string, accuracy float64) bool {
	return QuestionScore(id) < accuracy
}

// answer finds the entry a request asks and the calls that answer it. ok
// is false when the key does not hold the question: the server then
// answers in words, as a model that calls nothing.
func (a *ToolAnswers) answer(msgs []chatMessage, tools []offeredTool) (id string, calls []ToolCall, ok bool, err error) {
	if a == nil {
		return "", nil, false, nil
	}
	k, err := promptKey(msgs)
	if err != nil {
		return "", nil, false, err
	}
	offered := map[string]offeredTool{}
	for _, t := range tools {
		offered[t.Function.Name] = t
	}
	for _, e := range a.byPrompt[k] {
		if !e.offers(offered) {
			continue
		}
		calls, err := e.answer(offered)
		return e.id, calls, err == nil, err
	}
	return "", nil, false, nil
}

// offers reports whether the request's tools are the entry's functions,
// each named as given or with BFCL's '.' to '_' for OpenAI-style APIs.
func (e toolEntry) offers(offered map[string]offeredTool) bool {
	if len(offered) != len(e.funcs) {
		return false
	}
	for _, f := range e.funcs {
		if _, ok := offeredName(f, offered); !ok {
			return false
		}
	}
	return true
}

func offeredName(name string, offered map[string]offeredTool) (string, bool) {
	for _, n := range []string{name, strings.ReplaceAll(name, ".", "_")} {
		if _, ok := offered[n]; ok {
			return n, true
		}
	}
	return "", false
}

// answer builds the calls: each parameter that may be left out is, every
// other takes its first accepted value; a dict (or list of dicts) value
// is built the same way from its keys' accepted values.
func (e toolEntry) answer(offered map[string]offeredTool) ([]ToolCall, error) {
	var out []ToolCall
	for _, c := range e.calls {
		name, ok := offeredName(c.name, offered)
		if !ok {
			return nil, fmt.Errorf("%s: %s is not among the tools offered", e.id, c.name)
		}
		props := offered[name].Function.Parameters.Properties
		var buf bytes.Buffer
		buf.WriteByte('{')
		first := true
		for _, p := range sortedKeys(c.params) {
			accepted := c.params[p]
			if optional(accepted) || len(accepted) == 0 {
				continue
			}
			prop := props[p]
			v, err := concrete(accepted[0], prop.Type == "object", prop.Type == "array" && prop.Items != nil && prop.Items.Type == "object")
			if err != nil {
				return nil, fmt.Errorf("%s: %s.%s: %w", e.id, c.name, p, err)
			}
			if !first {
				buf.WriteString(", ")
			}
			first = false
			k, _ := json.Marshal(p)
			buf.Write(k)
			buf.WriteString(": ")
			buf.Write(v)
		}
		buf.WriteByte('}')
		out = append(out, ToolCall{Name: name, Arguments: buf.String()})
	}
	return out, nil
}

func optional(accepted []json.RawMessage) bool {
	return slices.ContainsFunc(accepted, func(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == `""` })
}

// concrete turns an accepted value into the value sent: as is, or for a
// dict its keys' first accepted values (optional keys left out).
func concrete(v json.RawMessage, isDict, isDictList bool) (json.RawMessage, error) {
	switch {
	case isDict:
		return concreteDict(v)
	case isDictList:
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		out := make([]json.RawMessage, len(items))
		for i, it := range items {
			d, err := concreteDict(it)
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return json.Marshal(out)
	}
	return v, nil
}

func concreteDict(v json.RawMessage) (json.RawMessage, error) {
	var keys map[string][]json.RawMessage
	if err := json.Unmarshal(v, &keys); err != nil {
		return nil, fmt.Errorf("a dict's accepted values: %w", err)
	}
	out := map[string]json.RawMessage{}
	for k, accepted := range keys {
		if optional(accepted) || len(accepted) == 0 {
			continue
		}
		out[k] = accepted[0]
	}
	return json.Marshal(out)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
