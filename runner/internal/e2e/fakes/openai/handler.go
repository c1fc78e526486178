package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

type handler struct {
	cfg      Config
	mux      *http.ServeMux
	created  int64
	counters *counters
	requests atomic.Int64
	ids      atomic.Uint64
	dead     atomic.Bool
	onDeath  func()
	logMu    sync.Mutex
}

func newHandler(cfg Config, onDeath func()) *handler {
	cfg = cfg.withDefaults()
	h := &handler{
		cfg:      cfg,
		mux:      http.NewServeMux(),
		created:  time.Now().Unix(),
		counters: newCounters(cfg.NumSpeculativeTokens),
		onDeath:  onDeath,
	}
	h.mux.HandleFunc("GET /health", h.health)
	h.mux.HandleFunc("GET /v1/models", h.models)
	h.mux.HandleFunc("GET /metrics", h.metrics)
	h.mux.HandleFunc("POST /v1/completions", h.completions)
	h.mux.HandleFunc("POST /v1/chat/completions", h.chatCompletions)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.dead.Load() {
		// A dead engine process answers nothing; drop the connection.
		panic(http.ErrAbortHandler)
	}
	if h.cfg.AccessLog == nil {
		h.mux.ServeHTTP(w, r)
		return
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		h.logMu.Lock()
		defer h.logMu.Unlock()
		fmt.Fprintf(h.cfg.AccessLog, "INFO:     %s - \"%s %s %s\" %d %s\n",
			r.RemoteAddr, r.Method, r.URL.RequestURI(), r.Proto, rec.status, http.StatusText(rec.status))
	}()
	h.mux.ServeHTTP(rec, r)
}

// Stats returns a snapshot of the counters.
func (h *handler) Stats() Stats { return h.counters.snapshot(h.requests.Load()) }

func (h *handler) healthy() bool {
	f := h.cfg.Faults
	if f.NeverHealthy {
		return false
	}
	return f.UnhealthyAfterRequests <= 0 || h.requests.Load() < int64(f.UnhealthyAfterRequests)
}

func (h *handler) health(w http.ResponseWriter, _ *http.Request) {
	if !h.healthy() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	Parent      any    `json:"parent"`
	MaxModelLen int    `json:"max_model_len"`
	Permission  []any  `json:"permission"`
}

func (h *handler) models(w http.ResponseWriter, _ *http.Request) {
	cards := make([]modelCard, 0, len(h.cfg.ServedModelNames))
	for _, name := range h.cfg.ServedModelNames {
		cards = append(cards, modelCard{
			ID: name, Object: "model", Created: h.created, OwnedBy: "vllm",
			Root: h.cfg.Model, MaxModelLen: h.cfg.MaxModelLen, Permission: []any{},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": cards})
}

func (h *handler) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	h.counters.writePrometheus(w, h.cfg.ServedModelNames[0])
}

// admit counts a generation request and applies the request-count faults.
// It reports false after writing an error response.
func (h *handler) admit(w http.ResponseWriter) bool {
	n := h.requests.Add(1)
	f := h.cfg.Faults
	if f.DieAfterRequests > 0 && n > int64(f.DieAfterRequests) {
		h.die()
		panic(http.ErrAbortHandler)
	}
	if f.NeverHealthy || (f.UnhealthyAfterRequests > 0 && n > int64(f.UnhealthyAfterRequests)) {
		writeError(w, http.StatusInternalServerError, "InternalServerError",
			"EngineCore encountered an issue. See stack trace (above) for the root cause.", nil)
		return false
	}
	return true
}

func (h *handler) die() {
	if h.dead.Swap(true) {
		return
	}
	if h.onDeath != nil {
		h.onDeath()
	}
}

func (h *handler) servesModel(name string) bool {
	return name == "" || slices.Contains(h.cfg.ServedModelNames, name)
}

func (h *handler) nextID(prefix string) string {
	return fmt.Sprintf("%s-%032x", prefix, h.ids.Add(1))
}

type errorBody struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    int    `json:"code"`
}

func writeError(w http.ResponseWriter, status int, typ, msg string, param any) {
	writeJSON(w, status, errorBody{errorInfo{Message: msg, Type: typ, Param: param, Code: status}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// statusRecorder remembers the status for the access log. Unwrap lets
// http.ResponseController reach the real writer's Flush and Hijack.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	written bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.written {
		s.status, s.written = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.written = true
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
