package job

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads"
)

// fingerprint is what makes res's numbers comparable (see
// summary.Fingerprint), read from the resolved recipe, the same values
// the serve, bench and lm_eval specs are built from.
func fingerprint(res *workloads.Resolved) *summary.Fingerprint {
	return fingerprintWith(res, nil)
}

// fingerprintWith is fingerprint with the tool versions that ran, where
// they are not the pinned ones (tools from PATH); nil takes the pins.
func fingerprintWith(res *workloads.Resolved, versions map[string]string) *summary.Fingerprint {
	r := res.Recipe
	p := summary.FingerprintParts{
		Model:     r.VLLM.Model,
		ServeArgv: append([]string{"vllm", "serve", r.VLLM.Model}, r.VLLM.ServeArgs...),
		ServeEnv:  []string{},
		Bench:     []string{},
		Accuracy:  []string{},
		GPU:       r.GPU,
		NumGPUs:   r.NumGPUs,
	}
	if ref, err := workloads.ParseImageRef(res.Image.Image); err == nil {
		p.ImageRepo = ref.Repo
	}
	for _, e := range res.Env {
		p.ServeEnv = append(p.ServeEnv, e.Name+"="+e.Value)
	}
	// summary.json is an artifact anyone with the build can read: a
	// secret-looking value is masked, as `runner plan` prints it.
	p.ServeEnv = proc.MaskEnv(p.ServeEnv)
	for _, b := range res.BenchRuns {
		p.Bench = append(p.Bench, fmt.Sprintf("%s backend=%s in=%d out=%d prompts=%d conc=%d reps=%d temperature=%g args=%s",
			b.Name, b.Backend, b.InputLen, b.OutputLen, b.NumPrompts, b.Concurrency, b.Repetitions, b.Temperature, strings.Join(b.Args, " ")))
	}
	if a := r.AIPerf; a != nil {
		// aiperf's shapes, and its version, make its numbers what they are.
		for _, c := range a.Configs {
			var args []string
			for _, arg := range c.Args {
				args = append(args, arg.Flag+"="+strings.Join(arg.Values, "|"))
			}
			p.Bench = append(p.Bench, fmt.Sprintf("%s %s args=%s", workloads.AIPerfSubject(c.Name, ""), AIPerfPackage.Requirement(), strings.Join(args, " ")))
		}
	}
	for _, t := range res.Tasks {
		var args []string
		for _, a := range t.ModelArgs {
			args = append(args, a.Key+"="+a.Value)
		}
		p.Accuracy = append(p.Accuracy, fmt.Sprintf("%s fewshot=%d model_args=%s", t.Name, t.NumFewshot, strings.Join(args, ",")))
	}
	if b := res.BFCL; b != nil {
		temp := "default"
		if b.Temperature != nil {
			temp = fmt.Sprint(*b.Temperature)
		}
		p.Accuracy = append(p.Accuracy, fmt.Sprintf("bfcl categories=%s threads=%d temperature=%s max_steps=%d max_cases=%v",
			strings.Join(b.TestCategories, ","), b.NumThreads, temp, b.MaximumStepLimit, b.MaxTestCases))
	}
	if len(res.Tasks) > 0 || res.BFCL != nil {
		p.Tools = map[string]string{}
		if len(res.Tasks) > 0 {
			p.Tools[tools.LMEval.Name] = tools.LMEval.Version
		}
		if res.BFCL != nil {
			p.Tools[tools.BFCLEval.Name] = tools.BFCLEval.Version
		}
		if versions != nil {
			for name := range p.Tools {
				p.Tools[name] = versions[name]
				if p.Tools[name] == "" {
					p.Tools[name] = unknownVersion
				}
			}
		}
	}
	return summary.NewFingerprint(p)
}

// imageParts splits a reference into its tag and digest, "" for absent.
func imageParts(image string) (tag, digest string) {
	ref, err := workloads.ParseImageRef(image)
	if err != nil {
		return "", ""
	}
	return ref.Tag, ref.Digest
}
