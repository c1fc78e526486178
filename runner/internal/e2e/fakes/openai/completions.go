package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

type completionRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	N                   *int            `json:"n"`
	Temperature         *float64        `json:"temperature"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	TotalTokens         int `json:"total_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails any `json:"prompt_tokens_details"`
}

type completionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
	StopReason   any     `json:"stop_reason"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Message      *chatDelta `json:"message,omitempty"`
	Delta        *chatDelta `json:"delta,omitempty"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
	StopReason   any        `json:"stop_reason"`
}

type response struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices any    `json:"choices"`
	Usage   *usage `json:"usage,omitempty"`
}

// promptInput is one prompt of a request.
type promptInput struct {
	text   string
	tokens int
	id     uint64
}

// job is a validated generation request.
type job struct {
	chat         bool
	model        string
	prompts      []promptInput
	n            int
	sampling     sampling
	stream       bool
	includeUsage bool
	continuous   bool
}

func (h *handler) completions(w http.ResponseWriter, r *http.Request) {
	h.serveGeneration(w, r, false)
}

func (h *handler) chatCompletions(w http.ResponseWriter, r *http.Request) {
	h.serveGeneration(w, r, true)
}

// serveGeneration answers a completion or chat completion request: with
// tool calls where the request and the server's configuration call for
// them, else with generated text, streamed or whole.
func (h *handler) serveGeneration(w http.ResponseWriter, r *http.Request, chat bool) {
	if !h.admit(w) {
		return
	}
	req, j, ok := h.readJob(w, r, chat)
	if !ok {
		return
	}
	if chat && h.answeredWithTools(w, req, j) {
		return
	}

	gens, promptTokens := h.plans(j, chat)
	c := h.counters
	c.add(&c.running, 1)
	defer c.add(&c.running, -1)
	c.add(&c.promptTokens, int64(promptTokens))

	id, created := h.nextID(map[bool]string{false: "cmpl", true: "chatcmpl"}[chat]), time.Now().Unix()
	var emit func(int) error
	if j.stream {
		emit = h.streamer(w, j, gens, id, created)
	}
	if !h.generate(r.Context(), gens, emit) {
		c.finish("abort")
		return
	}
	for _, g := range gens {
		c.finish(g.finishReason)
	}

	u := totalUsage(j, gens)
	if j.stream {
		endStream(w, j, chat, id, created, u)
		return
	}
	writeWhole(w, j, chat, gens, id, created, u)
}

// readJob decodes the request into a job, answering vLLM's error when the
// body or the request is bad; ok is false then.
func (h *handler) readJob(w http.ResponseWriter, r *http.Request, chat bool) (req completionRequest, j job, ok bool) {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<20))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("invalid JSON body: %v", err), nil)
		return req, job{}, false
	}
	j, status, err := h.newJob(req, chat)
	if err != nil {
		typ, param := "BadRequestError", any(nil)
		if status == http.StatusNotFound {
			typ, param = "NotFoundError", "model"
		}
		writeError(w, status, typ, err.Error(), param)
		return req, job{}, false
	}
	return req, j, true
}

// answeredWithTools answers a chat request with tool calls, or with the
// error its tools call for, and reports whether it did.
func (h *handler) answeredWithTools(w http.ResponseWriter, req completionRequest, j job) bool {
	calls, status, err := h.toolCalls(req, j)
	if err != nil {
		writeError(w, status, map[bool]string{true: "BadRequestError", false: "InternalServerError"}[status == http.StatusBadRequest], err.Error(), nil)
		return true
	}
	if calls == nil {
		return false
	}
	h.writeToolCalls(w, j, calls)
	return true
}

// plans are the generations of the job, n for each prompt, and the
// prompts' token count.
func (h *handler) plans(j job, chat bool) (gens []generation, promptTokens int) {
	for _, p := range j.prompts {
		for c := range j.n {
			gens = append(gens, h.plan(p.text, p.id, chat, c, j.sampling))
		}
	}
	for _, p := range j.prompts {
		promptTokens += p.tokens
	}
	return gens, promptTokens
}

// endStream ends a streamed answer: the usage chunk when asked for, then
// [DONE].
func endStream(w http.ResponseWriter, j job, chat bool, id string, created int64, u usage) {
	if j.includeUsage {
		obj := map[bool]string{false: "text_completion", true: "chat.completion.chunk"}[chat]
		writeEvent(w, response{ID: id, Object: obj, Created: created, Model: j.model, Choices: []any{}, Usage: &u})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	http.NewResponseController(w).Flush()
}

// writeWhole writes an answer that was not streamed, as a chat completion
// or a text completion.
func writeWhole(w http.ResponseWriter, j job, chat bool, gens []generation, id string, created int64, u usage) {
	if chat {
		choices := make([]chatChoice, len(gens))
		for i, g := range gens {
			text := g.text()
			choices[i] = chatChoice{Index: i, Message: &chatDelta{Role: "assistant", Content: &text},
				FinishReason: &g.finishReason, StopReason: g.stopReason}
		}
		writeJSON(w, http.StatusOK, response{ID: id, Object: "chat.completion", Created: created, Model: j.model, Choices: choices, Usage: &u})
		return
	}
	choices := make([]completionChoice, len(gens))
	for i, g := range gens {
		choices[i] = completionChoice{Index: i, Text: g.text(), FinishReason: &g.finishReason, StopReason: g.stopReason}
	}
	writeJSON(w, http.StatusOK, response{ID: id, Object: "text_completion", Created: created, Model: j.model, Choices: choices, Usage: &u})
}

// newJob validates a request the way vLLM does and resolves its defaults.
func (h *handler) newJob(req completionRequest, chat bool) (job, int, error) {
	if !h.servesModel(req.Model) {
		return job{}, http.StatusNotFound, fmt.Errorf("The model `%s` does not exist.", req.Model)
	}
	j := job{chat: chat, model: req.Model, n: 1, stream: req.Stream}
	if j.model == "" {
		j.model = h.cfg.ServedModelNames[0]
	}
	if req.StreamOptions != nil {
		if !req.Stream {
			return job{}, http.StatusBadRequest, errors.New("Stream options can only be defined when `stream=True`.")
		}
		j.includeUsage, j.continuous = req.StreamOptions.IncludeUsage, req.StreamOptions.ContinuousUsageStats
	}
	var err error
	if chat {
		j.prompts, err = chatPrompt(req.Messages)
	} else {
		j.prompts, err = parsePrompts(req.Prompt)
	}
	if err != nil {
		return job{}, http.StatusBadRequest, err
	}
	if req.N != nil {
		j.n = *req.N
	}
	if j.n < 1 {
		return job{}, http.StatusBadRequest, errors.New("n must be at least 1")
	}

	maxTokens := req.MaxTokens
	if chat && req.MaxCompletionTokens != nil {
		maxTokens = req.MaxCompletionTokens
	}
	s := sampling{minTokens: req.MinTokens, ignoreEOS: req.IgnoreEOS, temperature: 1}
	if req.Temperature != nil {
		s.temperature = *req.Temperature
	}
	if req.Seed != nil {
		s.seed = *req.Seed
	}
	if s.stop, err = parseStop(req.Stop); err != nil {
		return job{}, http.StatusBadRequest, err
	}
	longest := 0
	for _, p := range j.prompts {
		longest = max(longest, p.tokens)
	}
	switch {
	case maxTokens != nil:
		s.maxTokens = *maxTokens
	case chat:
		s.maxTokens = h.cfg.MaxModelLen - longest
	default:
		s.maxTokens = 16 // the OpenAI completions default
	}
	if s.maxTokens < 1 {
		return job{}, http.StatusBadRequest, fmt.Errorf("max_tokens must be at least 1, got %d.", s.maxTokens)
	}
	if longest+s.maxTokens > h.cfg.MaxModelLen {
		return job{}, http.StatusBadRequest, fmt.Errorf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			h.cfg.MaxModelLen, longest+s.maxTokens, longest, s.maxTokens)
	}
	j.sampling = s
	return j, http.StatusOK, nil
}

// generate paces the planned tokens, one step per TokenDelay, updating the
// counters as tokens come out. It reports false if the client went away.
func (h *handler) generate(ctx context.Context, gens []generation, emit func(step int) error) bool {
	steps := 0
	for _, g := range gens {
		steps = max(steps, len(g.steps))
	}
	trackers := make([]specTracker, len(gens))
	for i := range trackers {
		trackers[i].c = h.counters
	}
	for t := range steps {
		if sleep(ctx, h.cfg.TokenDelay) != nil {
			return false
		}
		if h.dead.Load() {
			panic(http.ErrAbortHandler)
		}
		produced := 0
		for i, g := range gens {
			if t < len(g.steps) {
				trackers[i].token()
				produced++
			}
		}
		h.counters.add(&h.counters.generationTokens, int64(produced))
		if emit != nil && emit(t) != nil {
			return false
		}
	}
	return true
}

// streamer returns the function that sends step t of every choice as SSE
// chunks; the last step of a choice carries its finish reason.
func (h *handler) streamer(w http.ResponseWriter, j job, gens []generation, id string, created int64) func(int) error {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	obj := "text_completion"
	if j.chat {
		obj = "chat.completion.chunk"
	}
	return func(t int) error {
		for i, g := range gens {
			if t >= len(g.steps) {
				continue
			}
			last := t == len(g.steps)-1
			if g.steps[t] == "" && !last {
				continue // text already cut by a stop string
			}
			var finish *string
			var stopReason any
			if last {
				finish, stopReason = &g.finishReason, g.stopReason
			}
			var u *usage
			if j.continuous {
				p := j.prompts[i/j.n].tokens
				u = &usage{PromptTokens: p, CompletionTokens: t + 1, TotalTokens: p + t + 1}
			}
			piece := g.steps[t]
			var choice any = completionChoice{Index: i, Text: piece, FinishReason: finish, StopReason: stopReason}
			if j.chat {
				if t == 0 {
					empty := ""
					role := response{ID: id, Object: obj, Created: created, Model: j.model,
						Choices: []chatChoice{{Index: i, Delta: &chatDelta{Role: "assistant", Content: &empty}}}}
					if err := writeEvent(w, role); err != nil {
						return err
					}
				}
				choice = chatChoice{Index: i, Delta: &chatDelta{Content: &piece}, FinishReason: finish, StopReason: stopReason}
			}
			if err := writeEvent(w, response{ID: id, Object: obj, Created: created, Model: j.model, Choices: []any{choice}, Usage: u}); err != nil {
				return err
			}
		}
		return nil
	}
}

// totalUsage totals the tokens of a finished request. Like vLLM, each
// prompt counts once however many choices it has.
func totalUsage(j job, gens []generation) usage {
	prompt, completion := 0, 0
	for _, p := range j.prompts {
		prompt += p.tokens
	}
	for _, g := range gens {
		completion += len(g.steps)
	}
	return usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

func writeEvent(w http.ResponseWriter, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode stream chunk: %w", err)
	}
	if _, err := fmt.Fprintf(w, "data: %s\n\n", body); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
