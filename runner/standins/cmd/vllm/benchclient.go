package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sampleRequest is one synthetic prompt.
type sampleRequest struct {
	prompt    string
	promptLen int
	outputLen int
}

// vocabulary for random prompts: one word is one token to the fake server.
var vocabulary = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo
lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu
red orange yellow green blue indigo violet black white gray silver gold copper iron tin lead
river ocean lake stream valley mountain forest desert island canyon meadow glacier prairie`)

// randomSamples builds prompts like vLLM's random dataset: lengths drawn
// uniformly from [len·(1−r), len·(1+r)], a shared prefix, seeded words.
func randomSamples(o benchOptions) []sampleRequest {
	rng := rand.New(rand.NewPCG(uint64(o.seed), 0x5eed))
	word := func() string { return vocabulary[rng.IntN(len(vocabulary))] }
	prefix := make([]string, o.prefixLen)
	for i := range prefix {
		prefix[i] = word()
	}
	draw := func(n int) int {
		lo := int(math.Floor(float64(n) * (1 - o.rangeRatio)))
		hi := int(math.Ceil(float64(n) * (1 + o.rangeRatio)))
		return max(lo+rng.IntN(hi-lo+1), 1)
	}
	out := make([]sampleRequest, o.numPrompts)
	for i := range out {
		in, outLen := draw(o.inputLen), draw(o.outputLen)
		words := append([]string(nil), prefix...)
		for range in {
			words = append(words, word())
		}
		out[i] = sampleRequest{prompt: strings.Join(words, " "), promptLen: len(words), outputLen: outLen}
	}
	return out
}

// requestOutput mirrors RequestFuncOutput; times are in seconds.
type requestOutput struct {
	success       bool
	err           string
	generatedText string
	outputTokens  int
	promptLen     int
	ttft          float64
	itl           []float64
	latency       float64
	startTime     float64
	queueTime     float64
}

// benchClient sends streaming requests the way vLLM's openai and
// openai-chat request functions do.
type benchClient struct {
	http      *http.Client
	apiURL    string
	chat      bool
	model     string
	ignoreEOS bool
	extra     map[string]any
	headers   map[string]string
	clock     func() float64
}

func newHTTPClient(maxConns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxConnsPerHost:     maxConns,
			MaxIdleConnsPerHost: max(maxConns, 100),
			IdleConnTimeout:     60 * time.Second,
			DisableCompression:  true,
		},
	}
}

func (c *benchClient) payload(s sampleRequest) map[string]any {
	p := map[string]any{"model": c.model, "stream": true, "stream_options": map[string]any{"include_usage": true}}
	if c.chat {
		p["messages"] = []map[string]string{{"role": "user", "content": s.prompt}}
		p["max_completion_tokens"] = s.outputLen
	} else {
		p["prompt"] = s.prompt
		p["max_tokens"] = s.outputLen
		p["repetition_penalty"] = 1.0
	}
	if c.ignoreEOS {
		p["ignore_eos"] = true
	}
	for k, v := range c.extra {
		p[k] = v
	}
	return p
}

// send runs one request and measures it; failures are recorded, never
// returned, as the benchmark reports them per request.
func (c *benchClient) send(ctx context.Context, s sampleRequest, requestID string) requestOutput {
	out := requestOutput{promptLen: s.promptLen}
	req, err := c.newRequest(ctx, s, requestID)
	if err != nil {
		out.err = err.Error()
		return out
	}
	start := c.clock()
	out.startTime = start
	resp, err := c.http.Do(req)
	if err != nil {
		out.err = pythonishError(err)
		return out
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		out.err = http.StatusText(resp.StatusCode)
		return out
	}
	c.readStream(resp.Body, start, &out)
	return out
}

// newRequest is the streamed completion request for s, with the API key,
// the request ID and the --header values.
func (c *benchClient) newRequest(ctx context.Context, s sampleRequest, requestID string) (*http.Request, error) {
	body, err := json.Marshal(c.payload(s))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.apiURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("x-request-id", requestID)
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// streamChunk is one server-sent event of a streamed completion or chat
// completion.
type streamChunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int  `json:"completion_tokens"`
		PromptTokens     *int `json:"prompt_tokens"`
	} `json:"usage"`
}

// readStream reads the server-sent events of a response that started at
// start into out: the time to the first token, the gaps between the
// others, the text and the usage. A request that never got a token fails,
// as in vLLM.
func (c *benchClient) readStream(body io.Reader, start float64, out *requestOutput) {
	var text strings.Builder
	first, last := true, start
	rd := bufio.NewReaderSize(body, 64<<10)
	for {
		line, err := rd.ReadString('\n')
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && data != "[DONE]" {
			now := c.clock()
			var chunk streamChunk
			if jerr := json.Unmarshal([]byte(data), &chunk); jerr != nil {
				out.err = fmt.Sprintf("json.decoder.JSONDecodeError: %v", jerr)
				return
			}
			if len(chunk.Choices) > 0 {
				if first {
					out.ttft, first = now-start, false
				} else {
					out.itl = append(out.itl, now-last)
				}
				last = now
				if t := chunk.Choices[0].Text; t != nil {
					text.WriteString(*t)
				}
				if t := chunk.Choices[0].Delta.Content; t != nil {
					text.WriteString(*t)
				}
			} else if chunk.Usage != nil {
				out.outputTokens = chunk.Usage.CompletionTokens
				// vLLM 0.33.0 counts the prompt as the server did.
				if pt := chunk.Usage.PromptTokens; pt != nil {
					out.promptLen = *pt
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				out.err = pythonishError(err)
				return
			}
			break
		}
	}
	out.generatedText = text.String()
	out.latency = last - start
	if first {
		out.err = "Never received a valid chunk to calculate TTFT. This response will be marked as failed!"
		return
	}
	out.success = true
}

// pythonishError renders a transport failure the way aiohttp's traceback
// ends, which is what vLLM stores in "errors".
func pythonishError(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return "Traceback (most recent call last):\naiohttp.client_exceptions.ClientConnectorError: Cannot connect to host " + op.Addr.String() + " ssl:default [" + err.Error() + "]\n"
	}
	return "Traceback (most recent call last):\naiohttp.client_exceptions.ServerDisconnectedError: Server disconnected (" + err.Error() + ")\n"
}

// specDecode holds the spec-decode counters scraped from /metrics.
type specDecode struct {
	drafts, draftTokens, accepted int64
	perPos                        map[int]int64
}

// fetchSpecDecode scrapes /metrics like serve.py's
// fetch_spec_decode_metrics: only vllm:spec_decode* series ending in
// _total, summed over engines. It returns nil when there are none.
func fetchSpecDecode(ctx context.Context, client *http.Client, baseURL string) *specDecode {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	m := &specDecode{perPos: map[int]int64{}}
	found := false
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "vllm:spec_decode") {
			continue
		}
		fields := strings.Fields(line)
		name, _, _ := strings.Cut(fields[0], "{")
		if !strings.HasSuffix(name, "_total") {
			continue
		}
		found = true
		f, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		v := int64(f)
		switch {
		case strings.Contains(name, "num_drafts"):
			m.drafts += v
		case strings.Contains(name, "num_draft_tokens"):
			m.draftTokens += v
		case strings.Contains(name, "num_accepted_tokens_per_pos"):
			if _, rest, ok := strings.Cut(line, `position="`); ok {
				if end := strings.IndexByte(rest, '"'); end >= 0 {
					if pos, err := strconv.Atoi(rest[:end]); err == nil {
						m.perPos[pos] += v
					}
				}
			}
		case strings.Contains(name, "num_accepted_tokens"):
			m.accepted += v
		}
	}
	if !found {
		return nil
	}
	return m
}

// specStats are the run's spec-decode deltas, in serve.py's terms.
type specStats struct {
	drafts, draftTokens, accepted int64
	acceptanceRate                float64 // percent
	acceptanceLength              float64
	perPosition                   []float64 // fractions
}

func specDelta(before, after *specDecode) *specStats {
	if before == nil || after == nil {
		return nil
	}
	s := &specStats{
		drafts:      after.drafts - before.drafts,
		draftTokens: after.draftTokens - before.draftTokens,
		accepted:    after.accepted - before.accepted,
	}
	if s.draftTokens <= 0 {
		return nil
	}
	s.perPosition = []float64{}
	if s.drafts > 0 {
		positions := slices.Sorted(maps.Keys(after.perPos))
		for p := range before.perPos {
			if _, ok := after.perPos[p]; !ok {
				positions = append(positions, p)
			}
		}
		slices.Sort(positions)
		for _, p := range positions {
			b := before.perPos[p]
			a, ok := after.perPos[p]
			if !ok {
				a = b
			}
			s.perPosition = append(s.perPosition, float64(a-b)/float64(s.drafts))
		}
		s.acceptanceLength = 1 + float64(s.accepted)/float64(s.drafts)
	}
	s.acceptanceRate = float64(s.accepted) / float64(s.draftTokens) * 100
	return s
}
