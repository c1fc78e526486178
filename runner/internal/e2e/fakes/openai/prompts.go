package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// parsePrompts accepts every prompt shape of the completions API: a string,
// a list of strings, a list of token ids, or a list of such lists.
func parsePrompts(raw json.RawMessage) ([]promptInput, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []promptInput{textPrompt(one)}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		out := make([]promptInput, len(many))
		for i, s := range many {
			out[i] = textPrompt(s)
		}
		return out, nil
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []promptInput{idsPrompt(ids)}, nil
	}
	var idLists [][]int64
	if json.Unmarshal(raw, &idLists) == nil && len(idLists) > 0 {
		out := make([]promptInput, len(idLists))
		for i, l := range idLists {
			out[i] = idsPrompt(l)
		}
		return out, nil
	}
	return nil, errors.New("prompt must be a string, a list of strings, or a list of token ids")
}

func textPrompt(s string) promptInput {
	return promptInput{text: s, tokens: len(strings.Fields(s)), id: hashString(s)}
}

func idsPrompt(ids []int64) promptInput {
	return promptInput{tokens: len(ids), id: hashString(fmt.Sprint(ids))}
}

func chatPrompt(msgs []chatMessage) ([]promptInput, error) {
	if len(msgs) == 0 {
		return nil, errors.New("messages must not be empty")
	}
	var parts []string
	for _, m := range msgs {
		text, err := messageText(m.Content)
		if err != nil {
			return nil, err
		}
		parts = append(parts, text)
	}
	return []promptInput{textPrompt(strings.Join(parts, "\n"))}, nil
}

func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("message content must be a string or a list of content parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

func parseStop(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("stop must be a string or a list of strings")
	}
	return many, nil
}
