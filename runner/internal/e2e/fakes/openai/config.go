package openai

import (
	"io"
	"time"
)

// Version is the vLLM version the stand-in claims.
const Version = "0.11.0"

// DefaultMaxModelLen is used when Config.MaxModelLen is not positive.
const DefaultMaxModelLen = 32768

// Config describes the served model and the faults to inject.
type Config struct {
	// Model is the model path or hub id, reported as "root" in /v1/models.
	Model string
	// ServedModelNames are the names requests may use; the default is Model.
	ServedModelNames []string
	// MaxModelLen bounds prompt plus completion tokens.
	MaxModelLen int
	// Accuracy is the fraction of arithmetic questions answered correctly,
	// from 0 (all wrong) to 1 (all right).
	Accuracy float64
	// AutoToolChoice and ToolCallParser are --enable-auto-tool-choice and
	// --tool-call-parser: without both, a request with tools and
	// tool_choice "auto" (the default) is refused, as vLLM refuses it.
	AutoToolChoice bool
	ToolCallParser string
	// ToolAnswers is the answer key of function-calling questions: a
	// question it holds is answered with the right calls, unless Accuracy
	// makes it one to get wrong (IsToolCallAnsweredCorrectly); then, and
	// for every other question, the answer is words, no call.
	ToolAnswers *ToolAnswers
	// NumSpeculativeTokens > 0 enables the vllm:spec_decode_* metrics.
	NumSpeculativeTokens int
	// TokenDelay is spent before each generated token (and so also before
	// the first one), giving measurable TTFT, TPOT and ITL.
	TokenDelay time.Duration
	// StartupDelay makes Server.Start wait before it listens, like vLLM,
	// which refuses connections until the model is loaded.
	StartupDelay time.Duration
	// Faults injects failures.
	Faults Faults
	// AccessLog, if set, receives one uvicorn-style line per request.
	AccessLog io.Writer
}

// Faults are failures the server injects. Zero values disable them.
type Faults struct {
	// DieAfterRequests makes the engine die when generation request number
	// DieAfterRequests+1 arrives: a Server stops serving and drops every
	// open connection; a bare handler aborts every later request.
	DieAfterRequests int
	// UnhealthyAfterRequests makes /health answer 503, and later generation
	// requests fail with 500, once that many generation requests arrived.
	UnhealthyAfterRequests int
	// NeverHealthy makes /health always answer 503.
	NeverHealthy bool
}

func (c Config) withDefaults() Config {
	if len(c.ServedModelNames) == 0 {
		c.ServedModelNames = []string{c.Model}
	}
	if c.MaxModelLen <= 0 {
		c.MaxModelLen = DefaultMaxModelLen
	}
	return c
}
