package workloads

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// AIPerf is the recipe's aiperf block: `aiperf profile` runs against the
// same server after the vllm bench configs.
type AIPerf struct {
	Configs    []AIPerfConfig
	Regression *Regression
}

// AIPerfConfig is one `aiperf profile` run; comma lists in its args (as
// concurrency: "16,24" with sweep-type: zip) make aiperf sweep, each
// point a result of its own.
type AIPerfConfig struct {
	Name string
	// Args are its flags, normalised to --kebab-case, in file order.
	Args       []BenchArg
	Assertions []Assertion
	Regression *Regression
}

// RegressionFor is the regression policy of config c: its own, else the
// block's, else nil.
func (a *AIPerf) RegressionFor(c *AIPerfConfig) *Regression {
	if c.Regression != nil {
		return c.Regression
	}
	return a.Regression
}

// AIPerfSubject is the name a config's results carry in summary.json
// and the gates: aiperf-<name>, and aiperf-<name>-<point> for a sweep
// point (the folder aiperf names it by).
func AIPerfSubject(config, point string) string {
	if point == "" {
		return "aiperf-" + config
	}
	return "aiperf-" + config + "-" + point
}

// runnerOwnedAIPerfFlags are set by the runner: the server, the model,
// where the artifacts go (aiperf's aliases included).
var runnerOwnedAIPerfFlags = map[string]string{
	"--model":               "the runner passes the recipe's served model",
	"--model-names":         "the runner passes the recipe's served model",
	"--tokenizer":           "the runner passes the recipe's model as the tokenizer",
	"--url":                 "the runner points aiperf at its server",
	"--api-key":             "the server needs no key; a key would be written into aiperf's artifacts",
	"--output-artifact-dir": "the runner writes aiperf's artifacts to results/<recipe>/aiperf-<name>/",
	"--artifact-dir":        "the runner writes aiperf's artifacts to results/<recipe>/aiperf-<name>/",
	// What would move or multiply the export the runner reads, so that
	// a point it plans has none (and is not judged).
	"--profile-export-prefix": "the runner reads aiperf's export as " + "profile_export_aiperf.json",
	"--profile-export-file":   "the runner reads aiperf's export as " + "profile_export_aiperf.json",
	"--num-profile-runs":      "the runner judges one run per point, one export each; repeat with more requests instead",
	// Code of a tokenizer repository would run in the benchmark client,
	// beside the results it writes.
	"--tokenizer-trust-remote-code": "the runner passes the recipe's model as the tokenizer and runs no tokenizer repository's code in aiperf",
}

// aiperfSweepFlags are the flags whose comma lists the runner plans sweep
// points of (AIPerfConfig.Points); a list in another would make aiperf
// run points the runner does not plan, and so does not judge.
var aiperfSweepFlags = map[string]bool{"--concurrency": true, "--request-count": true, "--num-requests": true}

// numberListRE is a comma list of numbers, as aiperf sweeps them.
var numberListRE = regexp.MustCompile(`^\s*[0-9.]+\s*(,\s*[0-9.]+\s*)+$`)

// aiperfLatency are aiperf's latency metrics (ms in its JSON export),
// aiperfOther the other metrics with statistics, aiperfRates the ones it
// reports as one value.
var (
	aiperfLatency = []string{"time_to_first_token", "time_to_second_token", "inter_token_latency", "inter_chunk_latency", "request_latency"}
	aiperfOther   = []string{"output_token_throughput_per_user", "output_sequence_length", "input_sequence_length"}
	aiperfRates   = []string{"request_throughput", "output_token_throughput", "request_count", "error_request_count", "goodput", "good_request_count", "benchmark_duration"}
	aiperfStats   = []string{"avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"}
)

// AIPerfResultKey is the summary key of one statistic of an aiperf
// metric: <metric>_<stat>, with _ms for latencies (the unit aiperf
// exports them in), so that the gates know lower is better; a rate is
// its bare name.
func AIPerfResultKey(metric, stat string) string {
	if slices.Contains(aiperfRates, metric) {
		return metric
	}
	if slices.Contains(aiperfLatency, metric) {
		return metric + "_" + stat + "_ms"
	}
	return metric + "_" + stat
}

// AIPerfResultKeys is every key the runner can read from aiperf's export.
func AIPerfResultKeys() []string {
	keys := slices.Clone(aiperfRates)
	for _, m := range append(slices.Clone(aiperfLatency), aiperfOther...) {
		for _, s := range aiperfStats {
			keys = append(keys, AIPerfResultKey(m, s))
		}
	}
	return keys
}

func (l *loader) decodeAIPerf(n *yaml.Node) *AIPerf {
	d := l.d
	a := &AIPerf{}
	refs := len(l.metricRefs)
	names := map[string]*yaml.Node{}
	d.Fields(n, "aiperf", []strictyaml.Field{
		{Name: "regression", Decode: func(_, v *yaml.Node) { a.Regression = l.decodeRegression(v, "aiperf.regression") }},
		{Name: "configs", Decode: func(_, v *yaml.Node) {
			d.Items(v, "aiperf.configs", func(i int, item *yaml.Node) {
				c := l.decodeAIPerfConfig(item, i)
				if c.Name == "" {
					return
				}
				if prev, dup := names[c.Name]; dup {
					d.Errorf(item, "aiperf config name %q is used twice (first at line %d); it names a results folder", c.Name, prev.Line)
					return
				}
				names[c.Name] = item
				a.Configs = append(a.Configs, c)
			})
			if v.Kind == yaml.SequenceNode && len(v.Content) == 0 {
				d.Errorf(v, "aiperf.configs is empty")
			}
		}},
	})
	if n.Kind == yaml.MappingNode && !hasKey(n, "configs") {
		d.Errorf(n, "aiperf needs configs")
	}
	// The metric names of assertions and regressions here are aiperf's,
	// checked against its keys rather than vllm bench's.
	keys := AIPerfResultKeys()
	for _, ref := range l.metricRefs[refs:] {
		if !slices.Contains(keys, ref.metric) {
			msg := fmt.Sprintf("%s: the runner reads no %q from aiperf's export", ref.what, ref.metric)
			if close := strictyaml.Closest(ref.metric, keys, 3); len(close) > 0 {
				msg += "; did you mean " + strings.Join(close, ", ") + "?"
			}
			d.Errorf(ref.node, "%s", msg)
		}
	}
	l.metricRefs = l.metricRefs[:refs]
	return a
}

func (l *loader) decodeAIPerfConfig(n *yaml.Node, i int) AIPerfConfig {
	d := l.d
	what := fmt.Sprintf("aiperf.configs[%d]", i)
	var c AIPerfConfig
	d.Fields(n, what, []strictyaml.Field{
		{Name: "name", Decode: func(_, v *yaml.Node) {
			if s, ok := d.String(v, what+".name"); ok {
				if !nameRE.MatchString(s) {
					d.Errorf(v, "aiperf config name %q: use letters, digits, '_', '.' and '-'; it names a results folder", s)
					return
				}
				c.Name = s
			}
		}},
		{Name: "args", Decode: func(_, v *yaml.Node) { c.Args = l.decodeAIPerfArgs(v, what+".args") }},
		{Name: "assertions", Decode: func(_, v *yaml.Node) { c.Assertions = l.decodeAssertions(v, what+".assertions") }},
		{Name: "regression", Decode: func(_, v *yaml.Node) { c.Regression = l.decodeRegression(v, what+".regression") }},
	})
	if n.Kind == yaml.MappingNode && !hasKey(n, "name") {
		d.Errorf(n, "%s needs name", what)
	}
	for _, a := range c.Args {
		for _, v := range a.Values {
			if !aiperfSweepFlags[a.Flag] && numberListRE.MatchString(v) {
				d.Errorf(n, "%s.args: %s %q is a list aiperf would sweep; the runner plans and judges sweeps over --concurrency and --request-count only", what, a.Flag, v)
			}
		}
	}
	if _, err := c.Points(); err != nil {
		d.Errorf(n, "%s.args: %v", what, err)
	}
	return c
}

// decodeAIPerfArgs reads the args map: each key an `aiperf profile`
// flag (a leading -- and _ accepted).
func (l *loader) decodeAIPerfArgs(n *yaml.Node, what string) []BenchArg {
	d := l.d
	return l.decodeFlagArgs(n, what, flagArgs{
		normalize: func(key string) string { return strings.TrimPrefix(key, "--") },
		owned:     runnerOwnedAIPerfFlags,
		value: func(v *yaml.Node, what, s string) bool {
			if strings.HasPrefix(s, "-") && !isNumber(s) {
				d.Errorf(v, "%s: %q starts with '-': aiperf would read it as a flag", what, s)
				return false
			}
			return true
		},
	})
}

// IsAIPerfMetric says whether the runner reads metric from aiperf's export.
func IsAIPerfMetric(metric string) bool {
	return slices.Contains(aiperfRates, metric) || slices.Contains(aiperfLatency, metric) || slices.Contains(aiperfOther, metric)
}

// IsAIPerfLatency says whether metric is a latency, exported in ms.
func IsAIPerfLatency(metric string) bool { return slices.Contains(aiperfLatency, metric) }

// IsAIPerfRate says whether metric is reported as one value (its avg).
func IsAIPerfRate(metric string) bool { return slices.Contains(aiperfRates, metric) }

// IsAIPerfStat says whether stat is a statistic the runner reads.
func IsAIPerfStat(stat string) bool { return slices.Contains(aiperfStats, stat) }
