package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
)

// serveArgs is what the stand-in takes from a "vllm serve" command line.
// vLLM has hundreds of engine flags; the stand-in accepts exactly those of
// the release the project pins (serve_flags.txt) and records them,
// using only the few below.
type serveArgs struct {
	model       string
	host        string
	port        int
	servedNames []string
	maxModelLen int
	specTokens  int
	specMethod  string
	// autoToolChoice and toolCallParser are --enable-auto-tool-choice
	// and --tool-call-parser.
	autoToolChoice bool
	toolCallParser string
	flags          []flagValue
}

type flagValue struct {
	name     string // canonical, e.g. "--max-model-len"
	value    string
	hasValue bool
}

// boolFlags are engine flags that never take a value, so a positional model
// after them is not swallowed. Flags named --enable-*, --disable-* and
// --no-* are treated the same way.
var boolFlags = map[string]bool{
	"--trust-remote-code":   true,
	"--enforce-eager":       true,
	"--language-model-only": true,
	"--skip-tokenizer-init": true,
	"--async-scheduling":    true,
	"--headless":            true,
}

// parseServeArgs reads "vllm serve" arguments as vLLM does where it
// matters to a caller: a flag vLLM does not have is refused, a unique
// prefix names its flag, and a flag takes the next argument as its value
// unless it is a known boolean or the next argument is itself a flag.
func parseServeArgs(args []string) (serveArgs, error) {
	a := serveArgs{host: "127.0.0.1", port: 8000}
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !isFlag(arg) {
			positional = append(positional, arg)
			continue
		}
		name, value, hasValue := strings.Cut(arg, "=")
		name, err := resolveFlag(canonicalFlag(name))
		if err != nil {
			return serveArgs{}, err
		}
		if !hasValue && !isBoolFlag(name) && i+1 < len(args) && !isFlag(args[i+1]) {
			i++
			value, hasValue = args[i], true
		}
		f := flagValue{name: name, value: value, hasValue: hasValue}
		a.flags = append(a.flags, f)
		if name == "--served-model-name" && hasValue {
			names := []string{value}
			for i+1 < len(args) && !isFlag(args[i+1]) {
				i++
				names = append(names, args[i])
			}
			a.servedNames = names
			a.flags[len(a.flags)-1].value = strings.Join(names, " ")
			continue
		}
		if err := a.apply(f); err != nil {
			return serveArgs{}, err
		}
	}
	switch {
	case len(positional) > 1:
		return serveArgs{}, fmt.Errorf("unrecognized arguments: %s", strings.Join(positional[1:], " "))
	case len(positional) == 1 && a.model != "":
		return serveArgs{}, fmt.Errorf("unrecognized arguments: %s", positional[0])
	case len(positional) == 1:
		a.model = positional[0]
	}
	if a.model == "" {
		return serveArgs{}, fmt.Errorf("the following arguments are required: model_tag")
	}
	return a, nil
}

func (a *serveArgs) apply(f flagValue) error {
	need := func() error {
		if !f.hasValue {
			return fmt.Errorf("argument %s: expected one argument", f.name)
		}
		return nil
	}
	var err error
	switch f.name {
	case "--model":
		if err = need(); err == nil {
			a.model = f.value
		}
	case "--host":
		if err = need(); err == nil {
			a.host = f.value
		}
	case "--port":
		if err = need(); err == nil {
			if a.port, err = strconv.Atoi(f.value); err != nil {
				err = fmt.Errorf("argument --port: invalid int value: '%s'", f.value)
			}
		}
	case "--max-model-len":
		if err = need(); err == nil {
			a.maxModelLen, err = parseMaxModelLen(f.value)
		}
	case "--speculative-config.num_speculative_tokens":
		if err = need(); err == nil {
			if a.specTokens, err = strconv.Atoi(f.value); err != nil {
				err = fmt.Errorf("argument %s: invalid int value: '%s'", f.name, f.value)
			}
		}
	case "--enable-auto-tool-choice":
		a.autoToolChoice = true
	case "--tool-call-parser":
		if err = need(); err == nil {
			a.toolCallParser = f.value
		}
	case "--speculative-config.method":
		if err = need(); err == nil {
			a.specMethod = f.value
		}
	case "--speculative-config":
		if err = need(); err == nil {
			err = a.applySpeculativeJSON(f.value)
		}
	}
	return err
}

func (a *serveArgs) applySpeculativeJSON(raw string) error {
	var cfg struct {
		Method               string `json:"method"`
		NumSpeculativeTokens *int   `json:"num_speculative_tokens"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fmt.Errorf("argument --speculative-config: invalid loads value: '%s'", raw)
	}
	if cfg.Method != "" {
		a.specMethod = cfg.Method
	}
	if cfg.NumSpeculativeTokens != nil {
		a.specTokens = *cfg.NumSpeculativeTokens
	}
	return nil
}

// speculativeTokens is the draft length in effect: a method without a
// count drafts one token, as MTP does by default.
func (a serveArgs) speculativeTokens() int {
	if a.specTokens == 0 && a.specMethod != "" {
		return 1
	}
	return a.specTokens
}

// parseMaxModelLen accepts vLLM's forms: a number, "auto" or -1 (the
// model's own limit), or a human-readable size where k/m are powers of ten
// and K/M powers of two.
func parseMaxModelLen(v string) (int, error) {
	if v == "auto" || v == "-1" {
		return openai.DefaultMaxModelLen, nil
	}
	mult := 1
	switch {
	case strings.HasSuffix(v, "k"):
		mult, v = 1000, strings.TrimSuffix(v, "k")
	case strings.HasSuffix(v, "K"):
		mult, v = 1024, strings.TrimSuffix(v, "K")
	case strings.HasSuffix(v, "m"):
		mult, v = 1000*1000, strings.TrimSuffix(v, "m")
	case strings.HasSuffix(v, "M"):
		mult, v = 1024*1024, strings.TrimSuffix(v, "M")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("argument --max-model-len: invalid human_readable_int value: '%s'", v)
	}
	return int(f * float64(mult)), nil
}

// resolveFlag expands an abbreviated flag and refuses one the pinned vLLM
// release does not have, with argparse's words.
func resolveFlag(name string) (string, error) {
	head, field, dotted := strings.Cut(name, ".")
	full, ok := lookupServeFlag(head)
	if !ok {
		return "", fmt.Errorf("unrecognized arguments: %s", head)
	}
	if dotted {
		return full + "." + field, nil
	}
	return full, nil
}

// canonicalFlag folds underscores into dashes in the flag name; in a dotted
// flag the part after the dot is a config field and keeps underscores.
func canonicalFlag(name string) string {
	head, field, dotted := strings.Cut(name, ".")
	head = "--" + strings.ReplaceAll(strings.TrimLeft(head, "-"), "_", "-")
	if !dotted {
		return head
	}
	return head + "." + strings.ReplaceAll(field, "-", "_")
}

func isBoolFlag(name string) bool {
	if boolFlags[name] {
		return true
	}
	for _, p := range []string{"--enable-", "--disable-", "--no-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func isFlag(arg string) bool {
	if len(arg) < 2 || arg[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(arg, 64)
	return err != nil
}

// pythonRepr renders the parsed flags like vLLM's "non-default args" dict.
func (a serveArgs) pythonRepr() string {
	parts := []string{fmt.Sprintf("'model_tag': '%s'", a.model)}
	for _, f := range a.flags {
		key := strings.NewReplacer("-", "_", ".", "_").Replace(strings.TrimLeft(f.name, "-"))
		val := "True"
		if f.hasValue {
			if _, err := strconv.ParseFloat(f.value, 64); err == nil {
				val = f.value
			} else {
				val = "'" + f.value + "'"
			}
		}
		parts = append(parts, fmt.Sprintf("'%s': %s", key, val))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
