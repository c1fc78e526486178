package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tool is a request's tool as BFCL's OpenAI handler sends it: '.' in a
// name as '_', BFCL's types as JSON schema's.
func tool(name string, props map[string]any) map[string]any {
	return map[string]any{"type": "function", "function": map[string]any{
		"name": name, "description": "d",
		"parameters": map[string]any{"type": "object", "properties": props},
	}}
}

var (
	triangleTool = tool("geometry_triangle_area", map[string]any{"base": map[string]any{"type": "integer"}, "height": map[string]any{"type": "number"}, "unit": map[string]any{"type": "string"}})
	bookTool     = tool("book", map[string]any{"stay": map[string]any{"type": "object"}, "rooms": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}})
	weatherTool  = tool("weather", map[string]any{"city": map[string]any{"type": "string"}})
)

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func TestToolCalls(t *testing.T) {
	key, err := LoadBFCLAnswers("testdata/bfcl")
	if err != nil {
		t.Fatal(err)
	}
	if key.Len() != 3 {
		t.Errorf("key holds %d entries, want the 3 single-turn ones", key.Len())
	}
	withParser := Config{Model: "m", Accuracy: 1, AutoToolChoice: true, ToolCallParser: "hermes", ToolAnswers: key}
	type call struct{ Name, Arguments string }
	tests := []struct {
		name    string
		cfg     Config
		req     map[string]any
		status  int
		errText string
		calls   []call // nil: answered in words
	}{
		{
			name:   "right answer: optional parameter left out, number as written, name as offered",
			cfg:    withParser,
			req:    map[string]any{"messages": []any{user("Area of a triangle with base 10 and height 5?")}, "tools": []any{triangleTool}},
			status: http.StatusOK,
			calls:  []call{{"geometry_triangle_area", `{"base": 10, "height": 5.0}`}},
		},
		{
			name: "dict and list of dicts built from their keys' accepted values; system message in the key",
			cfg:  withParser,
			req: map[string]any{"messages": []any{map[string]any{"role": "system", "content": "You book hotels."}, user("Book a room in Paris for two.")},
				"tools": []any{bookTool}},
			status: http.StatusOK,
			calls:  []call{{"book", `{"rooms": [{"kind":"double"}], "stay": {"city":"Paris","guests":2}}`}},
		},
		{
			name:   "parallel calls in order",
			cfg:    withParser,
			req:    map[string]any{"messages": []any{user("Weather in Boston and in Oslo?")}, "tools": []any{weatherTool}},
			status: http.StatusOK,
			calls:  []call{{"weather", `{"city": "Boston"}`}, {"weather", `{"city": "Oslo"}`}},
		},
		{
			name:   "a question to get wrong is answered in words",
			cfg:    Config{Model: "m", Accuracy: 0, AutoToolChoice: true, ToolCallParser: "hermes", ToolAnswers: key},
			req:    map[string]any{"messages": []any{user("Weather in Boston and in Oslo?")}, "tools": []any{weatherTool}},
			status: http.StatusOK,
		},
		{
			name:   "an unknown question is answered in words",
			cfg:    withParser,
			req:    map[string]any{"messages": []any{user("Weather in Rome?")}, "tools": []any{weatherTool}},
			status: http.StatusOK,
		},
		{
			name:   "other tools than the entry's: words",
			cfg:    withParser,
			req:    map[string]any{"messages": []any{user("Weather in Boston and in Oslo?")}, "tools": []any{weatherTool, bookTool}},
			status: http.StatusOK,
		},
		{
			name:   "tool_choice none: words",
			cfg:    withParser,
			req:    map[string]any{"messages": []any{user("Weather in Boston and in Oslo?")}, "tools": []any{weatherTool}, "tool_choice": "none"},
			status: http.StatusOK,
		},
		{
			name:    "auto tool choice without the serve flags is refused",
			cfg:     Config{Model: "m", Accuracy: 1, ToolAnswers: key},
			req:     map[string]any{"messages": []any{user("Weather in Boston and in Oslo?")}, "tools": []any{weatherTool}},
			status:  http.StatusBadRequest,
			errText: `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`,
		},
		{
			name:    "empty tools",
			cfg:     withParser,
			req:     map[string]any{"messages": []any{user("x")}, "tools": []any{}},
			status:  http.StatusBadRequest,
			errText: "`tools` must not be an empty array",
		},
		{
			name:    "tool_choice without tools",
			cfg:     withParser,
			req:     map[string]any{"messages": []any{user("x")}, "tool_choice": "auto"},
			status:  http.StatusBadRequest,
			errText: "When using `tool_choice`, `tools` must be set.",
		},
		{
			name:    "a named tool that is not offered",
			cfg:     withParser,
			req:     map[string]any{"messages": []any{user("x")}, "tools": []any{weatherTool}, "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "book"}}},
			status:  http.StatusBadRequest,
			errText: "does not match any of the specified `tools`",
		},
		{
			name:    "streamed tool calls are not answered",
			cfg:     withParser,
			req:     map[string]any{"messages": []any{user("Weather in Boston and in Oslo?")}, "tools": []any{weatherTool}, "stream": true},
			status:  http.StatusBadRequest,
			errText: "only unstreamed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, tt.cfg)
			tt.req["model"] = "m"
			status, body := post(t, srv.URL+"/v1/chat/completions", tt.req)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, body)
			}
			if tt.errText != "" {
				var e errorBody
				if err := json.Unmarshal(body, &e); err != nil || !strings.Contains(e.Error.Message, tt.errText) {
					t.Errorf("body %s, want it to contain %q", body, tt.errText)
				}
				return
			}
			var resp struct {
				Choices []struct {
					Message      map[string]json.RawMessage `json:"message"`
					FinishReason string                     `json:"finish_reason"`
				} `json:"choices"`
				Usage *struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(body, &resp); err != nil {
				t.Fatal(err)
			}
			if len(resp.Choices) != 1 || resp.Usage == nil || resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 {
				t.Fatalf("response %s: want one choice and usage", body)
			}
			ch := resp.Choices[0]
			if tt.calls == nil {
				if ch.FinishReason == "tool_calls" || len(ch.Message["tool_calls"]) > 0 || string(ch.Message["content"]) == "null" {
					t.Errorf("response %s, want words and no call", body)
				}
				return
			}
			if ch.FinishReason != "tool_calls" || string(ch.Message["content"]) != "null" || string(ch.Message["role"]) != `"assistant"` {
				t.Errorf("response %s, want finish_reason tool_calls, role assistant, content null", body)
			}
			var calls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			}
			if err := json.Unmarshal(ch.Message["tool_calls"], &calls); err != nil {
				t.Fatal(err)
			}
			var got []call
			for _, c := range calls {
				if !strings.HasPrefix(c.ID, "chatcmpl-tool-") || c.Type != "function" {
					t.Errorf("call id %q type %q, want chatcmpl-tool-… and function", c.ID, c.Type)
				}
				got = append(got, call{c.Function.Name, canonicalJSON(t, c.Function.Arguments)})
			}
			want := make([]call, len(tt.calls))
			for i, c := range tt.calls {
				want[i] = call{c.Name, canonicalJSON(t, c.Arguments)}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			// The number's spelling is kept: 5.0 stays a float in Python.
			if strings.Contains(tt.calls[0].Arguments, "5.0") && !strings.Contains(calls[0].Function.Arguments, "5.0") {
				t.Errorf("arguments %s lost the spelling 5.0", calls[0].Function.Arguments)
			}
		})
	}
}

// canonicalJSON re-encodes a JSON text with sorted keys and no spaces.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestLoadBFCLAnswersErrors(t *testing.T) {
	if _, err := LoadBFCLAnswers(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no possible_answer") {
		t.Errorf("empty dir: err = %v", err)
	}
}
