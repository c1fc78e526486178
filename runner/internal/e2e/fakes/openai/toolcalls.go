package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// errAutoToolChoice is vLLM's answer to tools with tool_choice "auto"
// (the default when tools are given) on a server started without a tool
// parser.
var errAutoToolChoice = errors.New(`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)

// toolCalls checks a chat request's tools and tool_choice as vLLM does and
// returns the calls the server answers with, or nil when it answers in
// words: no tools, tool_choice "none", a question the answer key does not
// hold, or one the server is to get wrong.
func (h *handler) toolCalls(req completionRequest, j job) ([]ToolCall, int, error) {
	hasTools := len(req.Tools) > 0 && string(req.Tools) != "null"
	hasChoice := len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null"
	if !hasTools {
		if hasChoice && string(req.ToolChoice) != `"none"` {
			return nil, http.StatusBadRequest, errors.New("When using `tool_choice`, `tools` must be set.")
		}
		return nil, http.StatusOK, nil
	}
	var tools []offeredTool
	if err := json.Unmarshal(req.Tools, &tools); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("tools: %v", err)
	}
	if len(tools) == 0 {
		return nil, http.StatusBadRequest, errors.New("`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.")
	}
	for _, t := range tools {
		if t.Type != "function" || t.Function.Name == "" {
			return nil, http.StatusBadRequest, fmt.Errorf("tools: each tool needs type \"function\" and a function name, got %q %q", t.Type, t.Function.Name)
		}
	}
	choice := "auto"
	if hasChoice {
		var named struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(req.ToolChoice, &choice) == nil:
			if choice != "none" && choice != "auto" && choice != "required" {
				return nil, http.StatusBadRequest, fmt.Errorf("Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.", choice)
			}
		case json.Unmarshal(req.ToolChoice, &named) == nil:
			found := false
			for _, t := range tools {
				found = found || t.Function.Name == named.Function.Name
			}
			if !found {
				return nil, http.StatusBadRequest, errors.New("The tool specified in `tool_choice` does not match any of the specified `tools`")
			}
			choice = "named"
		default:
			return nil, http.StatusBadRequest, errors.New("Invalid value for `tool_choice`")
		}
	}
	switch choice {
	case "none":
		return nil, http.StatusOK, nil
	case "auto":
		if !h.cfg.AutoToolChoice || h.cfg.ToolCallParser == "" {
			return nil, http.StatusBadRequest, errAutoToolChoice
		}
	}
	id, calls, ok, err := h.cfg.ToolAnswers.answer(req.Messages, tools)
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("the stand-in's answer key: %w", err)
	}
	if !ok || !IsToolCallAnsweredCorrectly(id, h.cfg.Accuracy) {
		return nil, http.StatusOK, nil
	}
	if j.stream || j.n != 1 {
		return nil, http.StatusBadRequest, errors.New("the stand-in answers tool calls only unstreamed, with n=1")
	}
	return calls, http.StatusOK, nil
}

// toolCallMessage is vLLM's ChatMessage as it serialises an answer whose
// tool parser found calls: no content, the calls, every other field null.
type toolCallMessage struct {
	Role         string         `json:"role"`
	Content      *string        `json:"content"`
	Refusal      *string        `json:"refusal"`
	Annotations  any            `json:"annotations"`
	Audio        any            `json:"audio"`
	FunctionCall any            `json:"function_call"`
	ToolCalls    []toolCallJSON `json:"tool_calls"`
	Reasoning    *string        `json:"reasoning"`
}

type toolCallJSON struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type toolCallChoice struct {
	Index        int              `json:"index"`
	Message      *toolCallMessage `json:"message"`
	Logprobs     any              `json:"logprobs"`
	FinishReason string           `json:"finish_reason"`
	StopReason   any              `json:"stop_reason"`
	TokenIDs     any              `json:"token_ids"`
}

// writeToolCalls answers with the calls, finish_reason "tool_calls", as
// vLLM does when its tool parser found calls in the output. The calls
// count as generated tokens, a word each piece of their text.
func (h *handler) writeToolCalls(w http.ResponseWriter, j job, calls []ToolCall) {
	msg := &toolCallMessage{Role: "assistant"}
	completion := 0
	for _, c := range calls {
		var tc toolCallJSON
		tc.ID = h.nextID("chatcmpl-tool")
		tc.Type = "function"
		tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
		msg.ToolCalls = append(msg.ToolCalls, tc)
		completion += 1 + len(strings.Fields(c.Arguments))
	}
	prompt := j.prompts[0].tokens
	c := h.counters
	c.add(&c.promptTokens, int64(prompt))
	c.add(&c.generationTokens, int64(completion))
	c.finish("stop")
	u := usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	writeJSON(w, http.StatusOK, response{
		ID: h.nextID("chatcmpl"), Object: "chat.completion", Created: time.Now().Unix(), Model: j.model,
		Choices: []toolCallChoice{{Index: 0, Message: msg, FinishReason: "tool_calls"}},
		Usage:   &u,
	})
}
