package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var client = &http.Client{Timeout: 10 * time.Second}

func newTestServer(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newHandler(cfg, nil))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s error = %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s read body error = %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func post(t *testing.T, url string, payload any) (int, []byte) {
	t.Helper()
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s error = %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s read body error = %v", url, err)
	}
	return resp.StatusCode, out
}

func TestInfoEndpoints(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{Model: "org/model-7b", ServedModelNames: []string{"m7"}, MaxModelLen: 4096})
	tests := []struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		{"/health", 200, ""},
		{"/nope", 404, `{"detail":"Not Found"}`},
	}
	for _, tt := range tests {
		status, body := get(t, srv.URL+tt.path)
		if status != tt.wantStatus || body != tt.wantBody {
			t.Errorf("GET %s = %d %q, want %d %q", tt.path, status, body, tt.wantStatus, tt.wantBody)
		}
	}

	status, body := get(t, srv.URL+"/v1/models")
	if status != 200 {
		t.Fatalf("GET /v1/models status = %d", status)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"object": "list", "data": []any{map[string]any{
		"id": "m7", "object": "model", "owned_by": "vllm", "root": "org/model-7b",
		"parent": nil, "max_model_len": 4096.0, "permission": []any{},
	}}}
	ignoreCreated := cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "created" })
	if diff := cmp.Diff(got, want, ignoreCreated); diff != "" {
		t.Errorf("GET /v1/models diff (-got +want):\n%s", diff)
	}
}

type completionResult struct {
	Model   string `json:"model"`
	Object  string `json:"object"`
	Choices []struct {
		Index        int    `json:"index"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
		StopReason   any    `json:"stop_reason"`
		Message      struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

func TestCompletions(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{Model: "m", MaxModelLen: 300, Accuracy: 1})
	question := "Question: What is 2 + 3?\nAnswer: 2 + 3 = 5\n#### 5\n\nQuestion: What is 17 + 25?\nAnswer:"
	type choice struct {
		Text, Finish string
		Stop         any
	}
	tests := []struct {
		name       string
		req        map[string]any
		wantChoice []choice
		wantUsage  usage
	}{
		{
			name:       "natural end answers the last question",
			req:        map[string]any{"model": "m", "prompt": question, "max_tokens": 256, "temperature": 0},
			wantChoice: []choice{{" 17 + 25 = 42. The answer is 42.\n#### 42", "stop", nil}},
			wantUsage:  usage{PromptTokens: 21, CompletionTokens: 11, TotalTokens: 32},
		},
		{
			name:       "max_tokens truncates",
			req:        map[string]any{"prompt": question, "max_tokens": 3, "temperature": 0},
			wantChoice: []choice{{" 17 + 25", "length", nil}},
			wantUsage:  usage{PromptTokens: 21, CompletionTokens: 3, TotalTokens: 24},
		},
		{
			name:       "stop string cuts the text but counts the token",
			req:        map[string]any{"prompt": question, "max_tokens": 256, "temperature": 0, "stop": []string{"Question:", "answer is"}},
			wantChoice: []choice{{" 17 + 25 = 42. The ", "stop", "answer is"}},
			wantUsage:  usage{PromptTokens: 21, CompletionTokens: 8, TotalTokens: 29},
		},
		{
			name:       "list prompt with token ids",
			req:        map[string]any{"prompt": []int{1, 2, 3, 4}, "max_tokens": 5, "ignore_eos": true},
			wantChoice: nil, // text is filler; checked through usage
			wantUsage:  usage{PromptTokens: 4, CompletionTokens: 5, TotalTokens: 9},
		},
		{
			name:      "ignore_eos produces exactly max_tokens for each of n choices",
			req:       map[string]any{"prompt": "a b c", "max_tokens": 40, "ignore_eos": true, "n": 2},
			wantUsage: usage{PromptTokens: 3, CompletionTokens: 80, TotalTokens: 83},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body := post(t, srv.URL+"/v1/completions", tt.req)
			if status != 200 {
				t.Fatalf("POST /v1/completions status = %d, body %s", status, body)
			}
			var got completionResult
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Object != "text_completion" || got.Model != "m" {
				t.Errorf("object, model = %q, %q; want text_completion, m", got.Object, got.Model)
			}
			if tt.wantChoice != nil {
				var choices []choice
				for _, c := range got.Choices {
					choices = append(choices, choice{c.Text, c.FinishReason, c.StopReason})
				}
				if diff := cmp.Diff(choices, tt.wantChoice); diff != "" {
					t.Errorf("choices diff (-got +want):\n%s", diff)
				}
			}
			if diff := cmp.Diff(got.Usage, tt.wantUsage); diff != "" {
				t.Errorf("usage diff (-got +want):\n%s", diff)
			}
			for _, c := range got.Choices {
				if n := len(strings.Fields(c.Text)); tt.req["ignore_eos"] == true && n != tt.req["max_tokens"] {
					t.Errorf("choice %d has %d words, want max_tokens=%v", c.Index, n, tt.req["max_tokens"])
				}
			}
		})
	}
}

func TestCompletionErrors(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{Model: "m", MaxModelLen: 10})
	tests := []struct {
		name       string
		path       string
		req        map[string]any
		wantStatus int
		wantType   string
	}{
		{"unknown model", "/v1/completions", map[string]any{"model": "other", "prompt": "x"}, 404, "NotFoundError"},
		{"context too long", "/v1/completions", map[string]any{"prompt": "a b c d e f", "max_tokens": 5}, 400, "BadRequestError"},
		{"zero max_tokens", "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 0}, 400, "BadRequestError"},
		{"bad prompt", "/v1/completions", map[string]any{"prompt": map[string]int{"a": 1}}, 400, "BadRequestError"},
		{"empty messages", "/v1/chat/completions", map[string]any{"messages": []any{}}, 400, "BadRequestError"},
		{"stream options without stream", "/v1/completions", map[string]any{"prompt": "a", "stream_options": map[string]bool{"include_usage": true}}, 400, "BadRequestError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body := post(t, srv.URL+tt.path, tt.req)
			var got errorBody
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("error body %s: %v", body, err)
			}
			if status != tt.wantStatus || got.Error.Type != tt.wantType || got.Error.Code != tt.wantStatus || got.Error.Message == "" {
				t.Errorf("POST %s = %d %s, want %d %s", tt.path, status, body, tt.wantStatus, tt.wantType)
			}
		})
	}
}

// sseEvents reads an SSE body into its data payloads.
func sseEvents(t *testing.T, body io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		events = append(events, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func TestStreaming(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{Model: "m", Accuracy: 1})
	prompt := "Question: What is 6 * 7?\nAnswer:"
	tests := []struct {
		name     string
		path     string
		req      map[string]any
		wantText string
		wantLen  int
	}{
		{
			name:     "completions",
			path:     "/v1/completions",
			req:      map[string]any{"prompt": prompt, "max_tokens": 100, "temperature": 0},
			wantText: " 6 * 7 = 42. The answer is 42.\n#### 42",
			wantLen:  11,
		},
		{
			name:     "chat",
			path:     "/v1/chat/completions",
			req:      map[string]any{"messages": []map[string]string{{"role": "user", "content": prompt}}, "max_completion_tokens": 100, "temperature": 0},
			wantText: "6 * 7 = 42. The answer is 42.\n#### 42",
			wantLen:  11,
		},
		{
			name:    "completions ignore_eos",
			path:    "/v1/completions",
			req:     map[string]any{"prompt": "hello there", "max_tokens": 64, "ignore_eos": true},
			wantLen: 64,
		},
		{
			name:    "chat ignore_eos with max_tokens",
			path:    "/v1/chat/completions",
			req:     map[string]any{"messages": []map[string]string{{"role": "user", "content": "hello"}}, "max_tokens": 33, "ignore_eos": true},
			wantLen: 33,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Non-streaming first: streaming must reproduce the same text.
			status, body := post(t, srv.URL+tt.path, tt.req)
			if status != 200 {
				t.Fatalf("status = %d, body %s", status, body)
			}
			var whole completionResult
			if err := json.Unmarshal(body, &whole); err != nil {
				t.Fatal(err)
			}
			wholeText := whole.Choices[0].Text + whole.Choices[0].Message.Content

			req := map[string]any{"stream": true, "stream_options": map[string]bool{"include_usage": true}}
			for k, v := range tt.req {
				req[k] = v
			}
			payload, _ := json.Marshal(req)
			resp, err := client.Post(srv.URL+tt.path, "application/json", bytes.NewReader(payload))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("Content-Type = %q, want text/event-stream", ct)
			}
			events := sseEvents(t, resp.Body)
			if events[len(events)-1] != "[DONE]" {
				t.Fatalf("last event = %q, want [DONE]", events[len(events)-1])
			}
			var text strings.Builder
			var finish string
			var u *usage
			for _, ev := range events[:len(events)-1] {
				var chunk struct {
					Choices []struct {
						Text         string  `json:"text"`
						FinishReason *string `json:"finish_reason"`
						Delta        struct {
							Content string `json:"content"`
						} `json:"delta"`
					} `json:"choices"`
					Usage *usage `json:"usage"`
				}
				if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
					t.Fatalf("chunk %q: %v", ev, err)
				}
				if chunk.Usage != nil {
					u = chunk.Usage
				}
				for _, c := range chunk.Choices {
					text.WriteString(c.Text + c.Delta.Content)
					if c.FinishReason != nil {
						finish = *c.FinishReason
					}
				}
			}
			if text.String() != wholeText {
				t.Errorf("streamed text = %q, non-streamed = %q", text.String(), wholeText)
			}
			if tt.wantText != "" && text.String() != tt.wantText {
				t.Errorf("streamed text = %q, want %q", text.String(), tt.wantText)
			}
			if u == nil || u.CompletionTokens != tt.wantLen || whole.Usage.CompletionTokens != tt.wantLen {
				t.Errorf("usage = %+v (non-streamed %+v), want %d completion tokens", u, whole.Usage, tt.wantLen)
			}
			if finish == "" {
				t.Error("no chunk carried a finish_reason")
			}
		})
	}
}

// specCounters parses /metrics the way vllm bench does.
func specCounters(t *testing.T, url string) map[string]int64 {
	t.Helper()
	status, body := get(t, url+"/metrics")
	if status != 200 {
		t.Fatalf("GET /metrics status = %d", status)
	}
	out := map[string]int64{}
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "vllm:spec_decode") {
			continue
		}
		name, value, _ := strings.Cut(line, " ")
		metric, labels, _ := strings.Cut(name, "{")
		if !strings.HasSuffix(metric, "_total") {
			continue
		}
		if _, pos, ok := strings.Cut(labels, `position="`); ok {
			metric += "/" + pos[:strings.IndexByte(pos, '"')]
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[metric] += int64(v)
	}
	return out
}

func TestSpecDecodeMetrics(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{Model: "m", NumSpeculativeTokens: 3})
	before := specCounters(t, srv.URL)
	if before["vllm:spec_decode_num_drafts_total"] != 0 || len(before) != 6 {
		t.Fatalf("fresh counters = %v, want 6 zero series", before)
	}
	const tokens = 200
	if status, body := post(t, srv.URL+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": tokens, "ignore_eos": true}); status != 200 {
		t.Fatalf("status = %d: %s", status, body)
	}
	after := specCounters(t, srv.URL)
	drafts := after["vllm:spec_decode_num_drafts_total"]
	accepted := after["vllm:spec_decode_num_accepted_tokens_total"]
	if got := after["vllm:spec_decode_num_draft_tokens_total"]; got != 3*drafts {
		t.Errorf("draft tokens = %d, want 3 × %d drafts", got, drafts)
	}
	// Every token after the first comes from a draft step yielding
	// accepted+1 tokens; only the last step may be partly unused.
	if produced := drafts + accepted; produced < tokens-1 || produced > tokens-1+3 {
		t.Errorf("drafts+accepted = %d, want within [%d, %d]", produced, tokens-1, tokens+2)
	}
	pos := []int64{after["vllm:spec_decode_num_accepted_tokens_per_pos_total/0"], after["vllm:spec_decode_num_accepted_tokens_per_pos_total/1"], after["vllm:spec_decode_num_accepted_tokens_per_pos_total/2"]}
	if pos[0]+pos[1]+pos[2] != accepted || !(pos[0] > pos[1] && pos[1] > pos[2] && pos[2] > 0) {
		t.Errorf("per-position accepted = %v (sum must be %d and falling)", pos, accepted)
	}
	if rate := float64(accepted) / float64(3*drafts); rate < 0.3 || rate > 0.8 {
		t.Errorf("acceptance rate = %.2f, want a plausible 0.3..0.8", rate)
	}
}

func TestMetricsWithoutSpeculation(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{Model: "org/m"})
	post(t, srv.URL+"/v1/completions", map[string]any{"prompt": "one two", "max_tokens": 7, "ignore_eos": true})
	_, body := get(t, srv.URL+"/metrics")
	for _, want := range []string{
		"# TYPE vllm:generation_tokens_total counter\n",
		`vllm:generation_tokens_total{engine="0",model_name="org/m"} 7.0` + "\n",
		`vllm:prompt_tokens_total{engine="0",model_name="org/m"} 2.0` + "\n",
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="org/m"} 1.0` + "\n",
		"# TYPE vllm:prompt_tokens_created gauge\n",
		"vllm:num_requests_running{",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "spec_decode") {
		t.Error("/metrics has spec_decode series without speculative tokens")
	}
}

func TestHealthFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults Faults
		// wantHealth[i] is /health before request i+1; the last entry is
		// after all requests.
		wantHealth []int
		wantGen    []int
	}{
		{"healthy", Faults{}, []int{200, 200, 200}, []int{200, 200}},
		{"unhealthy after 1", Faults{UnhealthyAfterRequests: 1}, []int{200, 503, 503}, []int{200, 500}},
		{"never healthy", Faults{NeverHealthy: true}, []int{503, 503, 503}, []int{500, 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newTestServer(t, Config{Model: "m", Faults: tt.faults})
			var health, gen []int
			for range tt.wantGen {
				s, _ := get(t, srv.URL+"/health")
				health = append(health, s)
				g, _ := post(t, srv.URL+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 2})
				gen = append(gen, g)
			}
			s, _ := get(t, srv.URL+"/health")
			health = append(health, s)
			if diff := cmp.Diff(health, tt.wantHealth); diff != "" {
				t.Errorf("/health statuses diff (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(gen, tt.wantGen); diff != "" {
				t.Errorf("completion statuses diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestServerDiesAfterRequests(t *testing.T) {
	t.Parallel()
	s := NewServer(Config{Model: "m", Faults: Faults{DieAfterRequests: 2}})
	if err := s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i := range 2 {
		if status, body := post(t, s.URL()+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 2}); status != 200 {
			t.Fatalf("request %d status = %d: %s", i+1, status, body)
		}
	}
	if _, err := client.Post(s.URL()+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a"}`)); err == nil {
		t.Error("third request succeeded, want a dropped connection")
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("server still serving after the die fault")
	}
	if !s.Died() {
		t.Error("Died() = false after the die fault")
	}
	if got := s.Stats().Requests; got != 3 {
		t.Errorf("Stats().Requests = %d, want 3", got)
	}
}

func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	if err := NewServer(Config{}).Start(t.Context(), "0.0.0.0:0"); err == nil {
		t.Error("Start(0.0.0.0:0) error = nil, want non-loopback refusal")
	}

	ctx, cancel := context.WithCancel(t.Context())
	var log bytes.Buffer
	s := NewServer(Config{Model: "m", StartupDelay: 10 * time.Millisecond, AccessLog: &syncWriter{buf: &log}})
	if err := s.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if status, _ := get(t, s.URL()+"/health"); status != 200 {
		t.Errorf("/health = %d, want 200", status)
	}
	if err := s.Start(ctx, "127.0.0.1:0"); err == nil {
		t.Error("second Start error = nil, want already started")
	}
	cancel()
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("server still serving after its context was cancelled")
	}
	if s.Died() {
		t.Error("Died() = true after a normal stop")
	}
	s.Close() // waits for the shutdown the cancel started
	if want := `"GET /health HTTP/1.1" 200 OK`; !strings.Contains(log.String(), want) {
		t.Errorf("access log %q lacks %q", log.String(), want)
	}
}

type syncWriter struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func TestIsAnsweredCorrectly(t *testing.T) {
	t.Parallel()
	for _, acc := range []float64{0, 0.5, 0.9, 1} {
		right := 0
		const n = 2000
		for i := range n {
			if IsAnsweredCorrectly(fmt.Sprintf("What is %d + %d?", i, 2*i+7), acc) {
				right++
			}
		}
		if got := float64(right) / n; got < acc-0.03 || got > acc+0.03 {
			t.Errorf("accuracy %.2f: answered %.3f correctly", acc, got)
		}
	}
}

func TestWrongAnswersAreDeterministic(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{Model: "m", Accuracy: 0})
	for range 2 {
		_, body := post(t, srv.URL+"/v1/completions", map[string]any{"prompt": "Question: What is 10 - 4?\nAnswer:", "max_tokens": 50, "temperature": 0.7, "seed": 3})
		var got completionResult
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if want := " 10 - 4 = 7. The answer is 7.\n#### 7"; got.Choices[0].Text != want {
			t.Errorf("text = %q, want %q", got.Choices[0].Text, want)
		}
	}
}
