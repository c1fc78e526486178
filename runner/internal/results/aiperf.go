package results

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/benchkite/benchkite/workloads"
)

// AIPerfExportFile is the aggregate statistics aiperf writes for one run
// (aiperf config/artifacts.py, PROFILE_EXPORT_AIPERF_JSON_FILE); a sweep
// writes one per point, in a folder named after the point.
const AIPerfExportFile = "profile_export_aiperf.json"

// AIPerfResult is what the runner reads of one aiperf export: each
// metric's statistics under workloads.AIPerfResultKey, and whether aiperf
// said the run was cancelled.
type AIPerfResult struct {
	Metrics   map[string]float64
	Cancelled bool
	// Units are the units aiperf gave, by metric.
	Units map[string]string
}

// aiperfMetric is one metric of the export (aiperf JsonMetricResult):
// its unit and the statistics present; aiperf leaves out what it did not
// compute.
type aiperfMetric struct {
	Unit string              `json:"unit"`
	rest map[string]*float64 // avg, p50, ...
}

func (m *aiperfMetric) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	unit, ok := raw["unit"]
	if !ok {
		return fmt.Errorf("no unit")
	}
	if err := json.Unmarshal(unit, &m.Unit); err != nil {
		return fmt.Errorf("unit: %w", err)
	}
	m.rest = map[string]*float64{}
	for k, v := range raw {
		if k == "unit" {
			continue
		}
		var f *float64
		if err := json.Unmarshal(v, &f); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		m.rest[k] = f
	}
	return nil
}

// latencyUnits are the units aiperf exports latencies in (display units,
// aiperf exporters/display_units_utils.py): milliseconds.
const latencyUnit = "ms"

// ParseAIPerfFile reads one profile_export_aiperf.json. It fails on what
// aiperf never writes (a metric without a unit, a non-numeric statistic,
// a latency not in milliseconds) and when the run measured no throughput.
func ParseAIPerfFile(path string) (AIPerfResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return AIPerfResult{}, fmt.Errorf("read aiperf export: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return AIPerfResult{}, fmt.Errorf("%s: not a JSON object: %w", path, err)
	}
	out := AIPerfResult{Metrics: map[string]float64{}, Units: map[string]string{}}
	if c, ok := top["was_cancelled"]; ok {
		if err := json.Unmarshal(c, &out.Cancelled); err != nil {
			return out, fmt.Errorf("%s: was_cancelled: %w", path, err)
		}
	}
	names := make([]string, 0, len(top))
	for k := range top {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		if !workloads.IsAIPerfMetric(name) {
			continue // configuration, timestamps, error summary, metrics the runner does not read
		}
		var m aiperfMetric
		if err := json.Unmarshal(top[name], &m); err != nil {
			return out, fmt.Errorf("%s: metric %s: %w", path, name, err)
		}
		if workloads.IsAIPerfLatency(name) && m.Unit != latencyUnit {
			return out, fmt.Errorf("%s: metric %s is in %q, want %q", path, name, m.Unit, latencyUnit)
		}
		out.Units[name] = m.Unit
		for stat, v := range m.rest {
			if v == nil {
				continue
			}
			if err := CheckValue(*v); err != nil {
				return out, fmt.Errorf("%s: %s.%s: %w", path, name, stat, err)
			}
			if !workloads.IsAIPerfStat(stat) {
				continue
			}
			if workloads.IsAIPerfRate(name) && stat != "avg" {
				continue
			}
			out.Metrics[workloads.AIPerfResultKey(name, stat)] = *v
		}
	}
	if _, ok := out.Metrics["request_throughput"]; !ok {
		return out, fmt.Errorf("%s: no request_throughput: aiperf measured no completed request", path)
	}
	return out, nil
}
