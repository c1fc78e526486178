// Package rootcause finds, in the output of a failed Python program or of
// vLLM's process tree, what a person would point at: the innermost
// exception of the process that died first. vLLM runs its engine in
// EngineCore (and worker) processes whose lines it prefixes
// "(EngineCore pid=M)"; when the engine fails the API server raises its
// own "Engine core initialization failed. See root cause above.", which
// only says that the engine died. Warnings and progress lines are never
// a cause.
package rootcause

import (
	"regexp"
	"strings"
	"sync"

	"github.com/benchkite/benchkite/runner/internal/linecut"
)

// Exception is one exception a process printed: the last line of its
// traceback, with the vLLM process prefix it came under.
type Exception struct {
	// Prefix is vLLM's "(EngineCore pid=1150)", or "" for a line of a
	// program that does not prefix its output.
	Prefix string
	// Process is the prefix's process name ("EngineCore", "APIServer").
	Process string
	// Line is the exception as Python printed it:
	// "ModuleNotFoundError: No module named 'flashinfer'".
	Line string
	seq  int
}

// String is the exception as the log shows it, prefix included, so that
// a search of the log finds it.
func (e Exception) String() string {
	if e.Prefix == "" {
		return e.Line
	}
	return e.Prefix + " " + e.Line
}

// Tracker is an io.Writer that follows the tracebacks in a stream as it
// is written, so that a root cause far above the stream's last lines is
// still known. It is safe for concurrent use.
type Tracker struct {
	mu    sync.Mutex
	split linecut.Splitter
	seq   int
	procs map[string]*procState
}

// procState is one process's place in its own lines.
type procState struct {
	name, prefix string
	first        int // the seq of its first line
	inTraceback  bool
	// chained: the line after an exception said that another
	// followed from it; the next traceback continues the chain.
	chained bool
	// root is the innermost exception of the chain being printed.
	root *Exception
	// last is the innermost exception of the process's last chain: the
	// one that ended it, when it died.
	last *Exception
}

// Write never fails.
func (t *Tracker) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.split.Write(p, func(b []byte) { t.line(string(b)) })
	return len(p), nil
}

// prefixRE is vLLM's per-process prefix: "(EngineCore pid=1150) ",
// "(APIServer pid=1032) ", "(EngineCore_DP0 pid=7) ", "(VllmWorker rank=0 pid=9) ".
var prefixRE = regexp.MustCompile(`^\(([A-Za-z][\w.-]*)[^()]*?\bpid=\d+\) ?`)

// errorHeaderRE is the header vLLM's logger puts before each line of a
// traceback it logs with logger.exception: "ERROR 12-02 07:49:19 [core.py:1330] ".
var errorHeaderRE = regexp.MustCompile(`^(ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \[[^\]]*\] ?`)

// exceptionRE is the line that ends a traceback: a (dotted) exception
// type, then its message.
var exceptionRE = regexp.MustCompile(`^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*(:( .*)?)?$`)

const (
	tracebackHead = "Traceback (most recent call last):"
	directCause   = "The above exception was the direct cause of the following exception:"
	duringHandle  = "During handling of the above exception, another exception occurred:"
)

func (t *Tracker) line(raw string) {
	t.seq++
	prefix, name := "", ""
	if m := prefixRE.FindStringSubmatch(raw); m != nil {
		prefix, name = strings.TrimSpace(m[0]), m[1]
		raw = raw[len(m[0]):]
	}
	if h := errorHeaderRE.FindString(raw); h != "" {
		raw = raw[len(h):]
	}
	l := strings.TrimRight(raw, " \t")
	if t.procs == nil {
		t.procs = map[string]*procState{}
	}
	st := t.procs[prefix]
	if st == nil {
		st = &procState{name: name, prefix: prefix, first: t.seq}
		t.procs[prefix] = st
	}
	switch {
	case strings.HasSuffix(l, tracebackHead):
		// Also "Error 3: Traceback ...", as vllm bench serve lists failed requests.
		if !st.chained {
			st.root = nil
		}
		st.inTraceback, st.chained = true, false
	case st.inTraceback && (l == "" || l[0] == ' ' || l[0] == '\t'):
		// A frame, its source line or its carets.
	case st.inTraceback:
		st.inTraceback = false
		if !exceptionRE.MatchString(l) {
			st.root = nil
			return
		}
		if st.root == nil {
			st.root = &Exception{Prefix: prefix, Process: name, Line: l}
		}
		last := *st.root
		last.seq = t.seq
		st.last = &last
	case l == directCause || l == duringHandle:
		st.chained = st.root != nil
	case l == "":
	default:
		st.chained = false
	}
}

// Root is the innermost exception of the process that died first, and
// whether there is one. An engine process (EngineCore, a worker) comes
// before the API server, which dies of the engine's death, and both
// before lines without a prefix (C++ warnings, a program that does not
// prefix); within each, the earliest.
func (t *Tracker) Root() (Exception, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best *Exception
	rank := func(e *Exception) int {
		switch {
		case e.Prefix == "":
			return 2
		case e.Process == "APIServer":
			return 1
		}
		return 0
	}
	for _, st := range t.procs {
		e := st.last
		if e == nil {
			continue
		}
		if best == nil || rank(e) < rank(best) || rank(e) == rank(best) && e.seq < best.seq {
			best = e
		}
	}
	if best == nil {
		return Exception{}, false
	}
	return *best, true
}

// Prefix is the first prefix seen of the process named name
// ("(APIServer pid=1032)"), or "".
func (t *Tracker) Prefix(name string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	first, seq := "", 0
	for _, st := range t.procs {
		if st.name == name && (first == "" || st.first < seq) {
			first, seq = st.prefix, st.first
		}
	}
	return first
}

// Of is the root cause in lines already read, "" when they hold no
// complete traceback.
func Of(lines []string) string {
	var t Tracker
	for _, l := range lines {
		t.line(l)
	}
	if e, ok := t.Root(); ok {
		return e.String()
	}
	return ""
}
