package workloads

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/agents"
)

// Resolved is a recipe with everything a job needs decided: where it runs,
// which image, the exact server argv and env, every bench run and task.
type Resolved struct {
	Recipe    *Recipe
	Profile   agents.Profile
	Device    string
	Precision string
	// PrecisionSource says where Precision came from: PrecisionFromModel,
	// PrecisionFromMetadata or PrecisionGuessed.
	PrecisionSource string
	TP, DP, PP      int
	Queue           string
	QueueSource     string
	Image           ImageChoice
	// PullImage is the reference the runtime pulls: Image.Image with the
	// profile's image rewrite applied (a pull-through cache), and
	// PullImageSource the rule that rewrote it, "" when none did. Results
	// and logs name Image.Image; only the pull uses PullImage.
	PullImage       string
	PullImageSource string
	// Env is the server's environment: profile defaults overlaid by the
	// recipe, plus HF_HOME.
	Env []EnvVar
	// TokenizerMode is the server's --tokenizer-mode, "" when the serve
	// args leave vLLM's default: the bench passes it too, so that client
	// and server count tokens alike.
	TokenizerMode string
	BenchRuns     []BenchRun
	Tasks         []ResolvedTask
	// BFCL is the recipe's function-calling part with its gates, nil when
	// there is none; the runner plans its categories (runner/internal/bfcl).
	BFCL *BFCL
}

// BenchRun is one expanded point of a bench config.
type BenchRun struct {
	// Name is the config name, or <name>-conc-<c> for a sweep.
	Name    string
	Config  string
	Backend string
	// Dataset is random or a RealTextDatasets name.
	Dataset     string
	InputLen    int
	OutputLen   int
	NumPrompts  int
	Concurrency int
	Repetitions int
	// Temperature is the bench's sampling temperature: the recipe's
	// --temperature, else 0 (greedy). vLLM's bench sends none unless told,
	// which leaves sampling, and speculative decoding's acceptance, to the
	// model's defaults; the runner passes --temperature always.
	Temperature float64
	// TemperatureSource is "recipe" or "default".
	TemperatureSource string
	// Args are the recipe's extra flags, flattened to argv, without
	// --temperature (that is Temperature).
	Args []string
}

// ResolvedTask is one lm_eval task with its merged model args.
type ResolvedTask struct {
	Name       string
	NumFewshot int
	// ModelArgs: workload args overlaid by task args, in first-seen order.
	ModelArgs []Arg
	Expect    []Expectation
}

// Resolve decides everything about a recipe that depends on the profile
// and the build environment. It is pure: env is the only input besides
// the values.
func Resolve(r *Recipe, profiles *agents.Set, env agents.Env) (*Resolved, error) {
	p, ok := profiles.Lookup(r.GPU)
	if !ok {
		return nil, fmt.Errorf("recipe %s: unknown gpu %q; known: %s", r.Name, r.GPU, strings.Join(profiles.Names(), ", "))
	}
	img, err := ChooseImage(r, p, env)
	if err != nil {
		return nil, fmt.Errorf("recipe %s: %w", r.Name, err)
	}
	pull, pullSrc, err := p.ImageFor(img.Image, env)
	if err != nil {
		return nil, fmt.Errorf("recipe %s: %w", r.Name, err)
	}
	queue, qsrc := p.QueueFor(env)
	res := &Resolved{
		Recipe:          r,
		Profile:         p,
		Device:          p.Device(),
		TP:              r.VLLM.Serve.TP,
		DP:              r.VLLM.Serve.DP,
		PP:              r.VLLM.Serve.PP,
		Queue:           queue,
		QueueSource:     qsrc,
		Image:           img,
		PullImage:       pull,
		PullImageSource: pullSrc,
		Env:             MergeEnv(p, r.VLLM.Env),
		BenchRuns:       ExpandBench(r.Bench),
		BFCL:            r.BFCL,
	}
	res.Precision, res.PrecisionSource = PrecisionOf(r.VLLM.Model)
	res.TokenizerMode, _ = ServeFlag(r.VLLM.ServeArgs, "--tokenizer-mode")
	if r.Bench != nil {
		if m := r.Bench.Metadata; m.Device != "" {
			res.Device = m.Device
		}
		if m := r.Bench.Metadata; m.Precision != "" {
			res.Precision, res.PrecisionSource = m.Precision, PrecisionFromMetadata
		}
		if m := r.Bench.Metadata; m.TP != 0 {
			res.TP = m.TP
		}
	}
	if r.LMEval != nil {
		for _, t := range r.LMEval.Tasks {
			res.Tasks = append(res.Tasks, ResolvedTask{
				Name:       t.Name,
				NumFewshot: t.NumFewshot,
				ModelArgs:  MergeArgs(r.LMEval.ModelArgs, t.ModelArgs),
				Expect:     t.Expect,
			})
		}
	}
	return res, nil
}

// MergeEnv overlays recipe env on profile env and sets HF_HOME to the
// profile's cache directory unless the recipe sets it.
func MergeEnv(p agents.Profile, recipe []EnvVar) []EnvVar {
	var out []EnvVar
	idx := map[string]int{}
	set := func(name, value string) {
		if i, ok := idx[name]; ok {
			out[i].Value = value
			return
		}
		idx[name] = len(out)
		out = append(out, EnvVar{Name: name, Value: value})
	}
	for _, e := range p.Env {
		set(e.Name, e.Value)
	}
	for _, e := range recipe {
		set(e.Name, e.Value)
	}
	if _, ok := idx["HF_HOME"]; !ok {
		set("HF_HOME", p.HFCacheDir())
	}
	return out
}

// MergeArgs overlays task args on workload args; a key keeps its first
// position so the argv reads like the recipe.
func MergeArgs(base, over []Arg) []Arg {
	out := append([]Arg(nil), base...)
	for _, a := range over {
		replaced := false
		for i := range out {
			if out[i].Key == a.Key {
				out[i].Value = a.Value
				replaced = true
			}
		}
		if !replaced {
			out = append(out, a)
		}
	}
	return out
}

// ExpandBench turns configs into runs: a sweep of concurrencies becomes one
// run per point, named <config>-conc-<c>.
func ExpandBench(b *Bench) []BenchRun {
	if b == nil {
		return nil
	}
	var runs []BenchRun
	for _, c := range b.Configs {
		var args []string
		temp, tempSrc := 0.0, "default"
		for _, a := range c.Args {
			if a.Flag == "--temperature" && len(a.Values) == 1 {
				// The loader checked it is a number.
				if f, err := strconv.ParseFloat(a.Values[0], 64); err == nil {
					temp, tempSrc = f, "recipe"
					continue
				}
			}
			args = append(args, a.Flag)
			args = append(args, a.Values...)
		}
		for i, conc := range c.MaxConcurrency {
			var prompts int
			switch len(c.NumPrompts) {
			case len(c.MaxConcurrency):
				prompts = c.NumPrompts[i]
			case 0:
				// Only an invalid config has none; the loader reports it.
			default:
				prompts = c.NumPrompts[0]
			}
			runs = append(runs, BenchRun{
				Name:              runName(c, conc),
				Config:            c.Name,
				Backend:           c.Backend,
				Dataset:           c.Dataset,
				InputLen:          c.InputLen,
				OutputLen:         c.OutputLen,
				NumPrompts:        prompts,
				Concurrency:       conc,
				Repetitions:       c.Repetitions,
				Temperature:       temp,
				TemperatureSource: tempSrc,
				Args:              args,
			})
		}
		// Lowest concurrency first: the lightest point is the canary; if
		// it fails the server is broken and the heavier ones need not run.
		sweep := runs[len(runs)-len(c.MaxConcurrency):]
		slices.SortStableFunc(sweep, func(a, b BenchRun) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	}
	return runs
}

// runName names one run of a config: the config's own name, or
// <config>-conc-<c> for a point of a concurrency sweep.
func runName(c BenchConfig, conc int) string {
	if len(c.MaxConcurrency) > 1 {
		return c.Name + "-conc-" + strconv.Itoa(conc)
	}
	return c.Name
}

// Checked in order; the first match names the precision. Integer 4-bit
// schemes come before fp4 so "w4a16" and "AWQ" do not read as fp4, the
// microscaling formats (MXFP8, MXFP4, NVFP4) keep their names, which say
// more than fp8 or fp4, and an fp8 name that also says w8a8 is fp8.
var precisionRE = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`(?i)int4|awq|gptq|w4a16`), "int4"},
	{regexp.MustCompile(`(?i)mxfp4`), "mxfp4"},
	{regexp.MustCompile(`(?i)nvfp4`), "nvfp4"},
	{regexp.MustCompile(`(?i)fp4`), "fp4"},
	{regexp.MustCompile(`(?i)mxfp8`), "mxfp8"},
	{regexp.MustCompile(`(?i)fp8`), "fp8"},
	{regexp.MustCompile(`(?i)int8|w8a8`), "int8"},
	{regexp.MustCompile(`(?i)bf16`), "bf16"},
	{regexp.MustCompile(`(?i)fp16`), "fp16"},
}

// Where a recipe's precision label came from.
const (
	PrecisionFromMetadata = "vllm_bench.metadata.precision"
	PrecisionFromModel    = "the model name"
	// PrecisionGuessed: neither says; bf16, the usual checkpoint dtype,
	// is assumed and every label says it was guessed.
	PrecisionGuessed = "guessed"
)

// PrecisionOf reads the weight precision from the model name, and says
// where it came from: PrecisionFromModel, or PrecisionGuessed (bf16) when
// the name does not say. Recipes override it in
// vllm_bench.metadata.precision.
func PrecisionOf(model string) (precision, source string) {
	base := model[strings.LastIndex(model, "/")+1:]
	for _, p := range precisionRE {
		if p.re.MatchString(base) {
			return p.name, PrecisionFromModel
		}
	}
	return "bf16", PrecisionGuessed
}

// ServeArgv is the server command inside the image: vllm serve <model>
// --port <port> <serve args>.
func (r *Resolved) ServeArgv(port int) []string {
	argv := []string{"vllm", "serve", r.Recipe.VLLM.Model, "--port", strconv.Itoa(port)}
	return append(argv, r.Recipe.VLLM.ServeArgs...)
}

// ServedModel is the model id the server answers to.
func (r *Resolved) ServedModel() string { return r.Recipe.VLLM.Serve.ServedModelName }
