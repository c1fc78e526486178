package workloads

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// serveArgs splits and checks serve_args, filling v.ServeArgs and v.Serve.
// Each flag goes through flagRules in order, the first that rejects it
// ending its checks (its value is then not taken); an accepted flag takes
// its value and valueRules read it.
func (l *loader) serveArgs(n *yaml.Node, text string, v *VLLM) {
	words, err := splitServeArgs(text)
	if err != nil {
		l.serveSplitError(n, err)
		return
	}
	c := newServeCheck(l.d, n, len(words))
	for i := 0; i < len(words); i++ {
		w := words[i]
		c.argv = append(c.argv, w.text)
		if !strings.HasPrefix(w.text, "-") || w.text == "-" || isNumber(w.text) {
			continue
		}
		f := parseServeFlag(w, words[i+1:])
		if !c.accepts(&f) {
			continue
		}
		if !f.hasValue && f.next != nil && (!strings.HasPrefix(f.next.text, "-") || isNumber(f.next.text)) {
			f.value, f.hasValue = f.next.text, true
			i++
			c.argv = append(c.argv, f.value)
		}
		c.read(f)
	}
	c.speculative()
	v.ServeArgs = c.argv
	v.Serve = c.si
}

// serveSplitError reports serve_args that do not split, at the word that
// broke when it is known.
func (l *loader) serveSplitError(n *yaml.Node, err error) {
	line, col := n.Line, n.Column
	var se *splitError
	if errors.As(err, &se) {
		line, col = l.d.Locate(n, se.word)
	}
	l.d.ErrorAt(line, col, "vllm.serve_args: %v", err)
	l.serveArgsUnread = true
}

// serveFlag is one flag word of serve_args as the rules see it.
type serveFlag struct {
	w word
	// flag is its canonical name (canonicalFlag), a dotted sub-key kept;
	// base is the name without it.
	flag, base string
	value      string
	hasValue   bool
	// bareLevel: a -O without a level attached.
	bareLevel bool
	// next is the word after it, nil at the end.
	next *word
}

// parseServeFlag reads the flag word w; rest are the words after it.
func parseServeFlag(w word, rest []word) serveFlag {
	f := serveFlag{w: w}
	if len(rest) > 0 {
		f.next = &rest[0]
	}
	flag, value, hasValue := strings.Cut(w.text, "=")
	if level, attached, ok := optimizationLevel(w.text); ok {
		flag, value, hasValue = "--optimization-level", level, attached
		f.bareLevel = !attached
	}
	f.flag = canonicalFlag(flag)
	f.base, _, _ = strings.Cut(f.flag, ".")
	f.value, f.hasValue = value, hasValue
	return f
}

// serveCheck is what the rules know of serve_args so far.
type serveCheck struct {
	d    *strictyaml.Decoder
	n    *yaml.Node
	argv []string
	si   ServeInfo
	seen map[string]word
	// A flag given whole and as dotted keys: vLLM's parser appends the
	// dotted keys as one JSON value after every other argument, so the
	// whole value is silently replaced.
	whole    map[string]word
	dotted   map[string]string
	dottedAt map[string]word
	mixed    map[string]bool
	// spec are the speculative config's keys, from either form.
	spec map[string]string
}

func newServeCheck(d *strictyaml.Decoder, n *yaml.Node, words int) *serveCheck {
	return &serveCheck{d: d, n: n, argv: make([]string, 0, words), si: ServeInfo{TP: 1, DP: 1, PP: 1},
		seen: make(map[string]word, words/2), whole: map[string]word{}, dotted: map[string]string{},
		dottedAt: map[string]word{}, mixed: map[string]bool{}, spec: map[string]string{}}
}

// at reports an error at the word w.
func (c *serveCheck) at(w word, format string, args ...any) {
	line, col := c.d.Locate(c.n, w.raw)
	c.d.ErrorAt(line, col, format, args...)
}

// lineOf is the line the word w is on.
func (c *serveCheck) lineOf(w word) int {
	line, _ := c.d.Locate(c.n, w.raw)
	return line
}

// flagRules check each flag word in order; one returning false rejects
// the flag, and the rules after it do not look at it.
var flagRules = []func(c *serveCheck, f *serveFlag) bool{
	(*serveCheck).levelFollows,
	(*serveCheck).oneForm,
	(*serveCheck).notRunnerOwned,
	(*serveCheck).noOwnedPrefix,
	(*serveCheck).knownToVLLM,
	(*serveCheck).once,
}

func (c *serveCheck) accepts(f *serveFlag) bool {
	for _, rule := range flagRules {
		if !rule(c, f) {
			return false
		}
	}
	return true
}

// levelFollows: vLLM reads a bare -O only before a level.
func (c *serveCheck) levelFollows(f *serveFlag) bool {
	if f.bareLevel && (f.next == nil || !isLevel(f.next.text)) {
		c.at(f.w, "vllm.serve_args: vLLM reads a bare -O only before a level 0 to 3; write -O<level> or --optimization-level <level>")
	}
	return true
}

// oneForm: a flag is given whole or as dotted keys, not both; said once
// per flag.
func (c *serveCheck) oneForm(f *serveFlag) bool {
	base, isDotted := f.base, f.flag != f.base
	if c.mixed[base] {
		return true
	}
	if isDotted {
		c.dotted[base] = f.flag
	} else {
		c.whole[base] = f.w
	}
	first, hasWhole := c.whole[base]
	dflag, hasDotted := c.dotted[base]
	if hasWhole && hasDotted {
		c.mixed[base] = true
		if !isDotted {
			first = c.dottedAt[base]
		}
		c.at(f.w, "vllm.serve_args: %s is given both whole and as dotted keys (%s; the other on line %d): vLLM keeps only the dotted keys and drops the whole value, so use one form", base, dflag, c.lineOf(first))
	}
	if _, ok := c.dottedAt[base]; isDotted && !ok {
		c.dottedAt[base] = f.w
	}
	return true
}

// notRunnerOwned: the flags the runner sets are not the recipe's.
func (c *serveCheck) notRunnerOwned(f *serveFlag) bool {
	if why, owned := runnerOwnedServeFlags[f.base]; owned {
		c.at(f.w, "vllm.serve_args: %s cannot be set in a recipe: %s", f.base, why)
		return false
	}
	return true
}

// noOwnedPrefix: nor are their abbreviations, which vLLM's argparse takes
// for them.
func (c *serveCheck) noOwnedPrefix(f *serveFlag) bool {
	if full := abbreviates(f.base, runnerOwnedServeFlags); len(full) > 0 {
		c.at(f.w, "vllm.serve_args: %s abbreviates %s, which the runner sets: vLLM's argparse accepts a unique prefix of a flag as the flag; write flags in full", f.base, strings.Join(full, " or "))
		return false
	}
	return true
}

// knownToVLLM: a near miss of vLLM's serve flags is an error, a flag it
// does not have a warning.
func (c *serveCheck) knownToVLLM(f *serveFlag) bool {
	msg, isErr := serveFlagProblem(f.base)
	switch {
	case msg == "":
	case isErr:
		c.at(f.w, "%s", msg)
		return false
	default:
		line, col := c.d.Locate(c.n, f.w.raw)
		c.d.WarnAt(line, col, "%s", msg)
	}
	return true
}

// once: a flag is given once.
func (c *serveCheck) once(f *serveFlag) bool {
	if prev, dup := c.seen[f.flag]; dup {
		c.at(f.w, "vllm.serve_args: %s is given twice (also on line %d)", f.flag, c.lineOf(prev))
		return false
	}
	c.seen[f.flag] = f.w
	return true
}

// valueRules read the values of the flags the runner needs to know.
var valueRules = map[string]func(c *serveCheck, f serveFlag){
	"--tensor-parallel-size":   func(c *serveCheck, f serveFlag) { c.si.TP = c.posInt(f) },
	"--data-parallel-size":     func(c *serveCheck, f serveFlag) { c.si.DP = c.posInt(f) },
	"--pipeline-parallel-size": func(c *serveCheck, f serveFlag) { c.si.PP = c.posInt(f) },
	"--trust-remote-code":      func(c *serveCheck, _ serveFlag) { c.si.TrustRemoteCode = true },
	"--enable-expert-parallel": func(c *serveCheck, _ serveFlag) { c.si.ExpertParallel = true },
	"--served-model-name":      (*serveCheck).servedModelName,
	"--kv-cache-dtype":         func(c *serveCheck, f serveFlag) { c.si.KVCacheDType = f.value },
	"--tokenizer-mode":         (*serveCheck).tokenizerMode,
	"--speculative-config":     (*serveCheck).speculativeConfig,
}

// read applies the flag's value rule, if it has one; each dotted key of
// --speculative-config is one of the config's keys.
func (c *serveCheck) read(f serveFlag) {
	if rule, ok := valueRules[f.flag]; ok {
		rule(c, f)
	} else if strings.HasPrefix(f.flag, "--speculative-config.") {
		c.speculativeKey(f)
	}
}

// posInt is the flag's value as a size from 1 to 1024; 1 when it is not.
func (c *serveCheck) posInt(f serveFlag) int {
	v, ok := atoi(f.value)
	if !f.hasValue || !ok || v < 1 || v > 1024 {
		c.at(f.w, "vllm.serve_args: %s needs a positive integer, got %q", f.flag, f.value)
		return 1
	}
	return v
}

func (c *serveCheck) servedModelName(f serveFlag) {
	if !f.hasValue || !modelRE.MatchString(f.value) || strings.HasPrefix(f.value, "-") {
		// A leading '-' would make the name a flag where the runner
		// passes it on (vllm bench serve --model NAME).
		c.at(f.w, "vllm.serve_args: --served-model-name needs a name like org/model, got %q", f.value)
	}
	c.si.ServedModelName = f.value
}

func (c *serveCheck) tokenizerMode(f serveFlag) {
	if !f.hasValue || f.value == "" {
		c.at(f.w, "vllm.serve_args: --tokenizer-mode needs a value")
	}
}

func (c *serveCheck) speculativeConfig(f serveFlag) {
	var cfg map[string]any
	if err := json.Unmarshal([]byte(f.value), &cfg); err != nil {
		c.at(f.w, "vllm.serve_args: --speculative-config needs a JSON object: %v", err)
		return
	}
	for k, val := range cfg {
		c.spec[k] = fmt.Sprint(val)
	}
}

func (c *serveCheck) speculativeKey(f serveFlag) {
	if !f.hasValue {
		c.at(f.w, "vllm.serve_args: %s needs a value", f.flag)
		return
	}
	c.spec[strings.TrimPrefix(f.flag, "--speculative-config.")] = f.value
}

// speculative checks the speculative config the flags gave, whole or as
// dotted keys, and keeps it.
func (c *serveCheck) speculative() {
	if len(c.spec) == 0 {
		return
	}
	d, n, spec := c.d, c.n, c.spec
	sp := &Speculative{Method: spec["method"], Model: spec["model"]}
	if nt, ok := spec["num_speculative_tokens"]; ok {
		f, err := strconv.ParseFloat(nt, 64)
		if err != nil || f < 1 || f > 64 || f != float64(int(f)) {
			line, col := d.Locate(n, "num_speculative_tokens")
			d.ErrorAt(line, col, "vllm.serve_args: speculative num_speculative_tokens must be a positive integer, got %q", nt)
		}
		sp.NumTokens = int(f)
	}
	if sp.Model != "" && (!modelRE.MatchString(sp.Model) || strings.Contains(sp.Model, "..")) {
		line, col := d.Locate(n, sp.Model)
		d.ErrorAt(line, col, "vllm.serve_args: speculative model %q must be a hub id (org/name) or a plain path", sp.Model)
	}
	if sp.Method == "" {
		d.Errorf(n, "vllm.serve_args: speculative config without a method")
	}
	c.si.Speculative = sp
}
