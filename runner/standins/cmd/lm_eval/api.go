package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
)

// until is gsm8k's stop list.
var until = []string{"Question:", "</s>", "<|im_end|>"}

// apiClient sends generate_until requests like lm-eval's TemplateAPI.
type apiClient struct {
	http       *http.Client
	url        string
	model      any
	concurrent int
	maxRetries int
	maxGenToks int
	seed       int
}

func newAPIClient(o options) (*apiClient, error) {
	get := func(k string, def any) any {
		if v, ok := o.modelArgs.Get(k); ok {
			return v
		}
		return def
	}
	url, _ := get("base_url", "").(string)
	if url == "" {
		return nil, errors.New("base_url is required for local-completions models")
	}
	c := &apiClient{
		url:        url,
		model:      get("model", nil),
		concurrent: asInt(get("num_concurrent", 1), 1),
		maxRetries: asInt(get("max_retries", 3), 3),
		maxGenToks: asInt(get("max_gen_toks", 256), 256),
		seed:       asInt(get("seed", 1234), 1234),
	}
	timeout := time.Duration(asInt(get("timeout", 300), 300)) * time.Second
	c.http = &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxIdleConnsPerHost: max(c.concurrent, 2),
		},
	}
	return c, nil
}

func asInt(v any, def int) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return def
}

// generateAll answers every prompt with num_concurrent workers. Any request
// that still fails after max_retries attempts fails the run, as in lm-eval.
func (c *apiClient) generateAll(ctx context.Context, prompts []string) ([]string, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := make([]string, len(prompts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(c.concurrent, 1) {
		wg.Go(func() {
			for i := range next {
				text, err := c.generate(ctx, prompts[i])
				if err != nil {
					cancel(err)
					continue
				}
				out[i] = text
			}
		})
	}
feed:
	for i := range prompts {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *apiClient) generate(ctx context.Context, prompt string) (string, error) {
	var lastErr error
	for attempt := range max(c.maxRetries, 1) {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		text, err := c.once(ctx, prompt)
		if err == nil {
			return text, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	return "", fmt.Errorf("API request failed after %d attempts: %w", max(c.maxRetries, 1), lastErr)
}

func (c *apiClient) once(ctx context.Context, prompt string) (string, error) {
	payload := pyjson.NewObject().
		Set("prompt", []string{prompt}).
		Set("model", c.model).
		Set("max_tokens", c.maxGenToks).
		Set("temperature", 0.0).
		Set("stop", until).
		Set("seed", c.seed)
	body, err := pyjson.Marshal(payload, pyjson.Options{})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s for url: %s: %s", resp.Status, c.url, bytes.TrimSpace(data))
	}
	var out struct {
		Choices []struct {
			Index int    `json:"index"`
			Text  string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("decode response: %w", err)
	}
	if len(out.Choices) == 0 {
		return "", errors.New("response has no choices")
	}
	return out.Choices[0].Text, nil
}
