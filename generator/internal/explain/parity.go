package explain

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/workloads"
)

// buildExpl is vllm.build as the job runs it.
type buildExpl struct {
	Dockerfile string   `json:"dockerfile"`
	Context    string   `json:"context"`
	Args       []string `json:"args"`
}

// aiperfExpl is one aiperf config: its flags after the runner's, and its
// gates.
type aiperfExpl struct {
	Name  string   `json:"name"`
	Args  []string `json:"args"`
	Gates []string `json:"gates,omitempty"`
}

// parity fills the fields of start-up time, agent tags, image build and
// aiperf.
func (ex *Explanation) parity(res *workloads.Resolved) {
	r := res.Recipe
	ex.StartupTimeoutS = int(r.StartupTimeout().Seconds())
	if secs, fromEnv := r.EngineReadyTimeout(); fromEnv {
		ex.EngineReadyTimeoutS = secs
	}
	if len(res.Profile.Tags) > 0 {
		ex.AgentTags = res.Profile.AgentTags(res.Queue)
	}
	if b := r.VLLM.Build; b != nil {
		be := &buildExpl{Dockerfile: b.Dockerfile, Context: b.Context, Args: []string{}}
		for _, a := range b.Args {
			switch {
			case a.FromEnv:
				be.Args = append(be.Args, a.Name+" (from the job's environment)")
			default:
				be.Args = append(be.Args, a.Name+"="+a.Value)
			}
		}
		ex.Build = be
	}
	if a := r.AIPerf; a != nil {
		for _, c := range a.Configs {
			ae := aiperfExpl{Name: c.Name, Args: []string{}}
			for _, arg := range c.Args {
				if len(arg.Values) == 0 {
					ae.Args = append(ae.Args, arg.Flag)
				}
				for _, v := range arg.Values {
					ae.Args = append(ae.Args, arg.Flag, v)
				}
			}
			for _, as := range c.Assertions {
				ae.Gates = append(ae.Gates, describeAssertion(as))
			}
			if p := a.RegressionFor(&c); p != nil {
				for _, m := range p.Metrics {
					ae.Gates = append(ae.Gates, fmt.Sprintf("%s flagged when over %g%% worse and beyond the noise of the last %d comparable nights", m.Metric, m.MaxDropPct, p.Nights))
				}
			}
			ex.AIPerf = append(ex.AIPerf, ae)
		}
	}
}

func describeAssertion(a workloads.Assertion) string {
	var parts []string
	if a.Min != nil {
		parts = append(parts, fmt.Sprintf(">= %g", *a.Min))
	}
	if a.Max != nil {
		parts = append(parts, fmt.Sprintf("<= %g", *a.Max))
	}
	return a.Metric + " " + strings.Join(parts, " and ")
}

// rows are the header rows of the parity fields.
func (ex *Explanation) parityRows(row func(k, v string)) {
	if ex.EngineReadyTimeoutS > 0 {
		row("startup", fmt.Sprintf("%d s (health wait); VLLM_ENGINE_READY_TIMEOUT_S %d s, the recipe's env", ex.StartupTimeoutS, ex.EngineReadyTimeoutS))
	} else {
		row("startup", fmt.Sprintf("%d s (health wait and VLLM_ENGINE_READY_TIMEOUT_S)", ex.StartupTimeoutS))
	}
	for _, g := range ex.StartupGates {
		row("startup gate", g)
	}
	if len(ex.AgentTags) > 0 {
		var tags []string
		for k, v := range ex.AgentTags {
			tags = append(tags, k+"="+v)
		}
		sort.Strings(tags)
		row("agent tags", strings.Join(tags, " "))
	}
	if b := ex.Build; b != nil {
		s := fmt.Sprintf("docker build -f %s %s", b.Dockerfile, b.Context)
		if len(b.Args) > 0 {
			s += "; args " + strings.Join(b.Args, ", ")
		}
		row("build", s)
	}
}

// writeAIPerf is the aiperf section of the text form.
func (ex *Explanation) writeAIPerf(w io.Writer) {
	if len(ex.AIPerf) == 0 {
		return
	}
	fmt.Fprintln(w, "\naiperf configs (after the bench, on the same server; results/<recipe>/aiperf-<name>/)")
	for _, a := range ex.AIPerf {
		fmt.Fprintf(w, "  %s\n    args  %s\n", a.Name, shell.Join(a.Args))
		for _, g := range a.Gates {
			fmt.Fprintf(w, "    gate  %s\n", g)
		}
	}
}
