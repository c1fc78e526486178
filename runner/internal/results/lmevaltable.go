package results

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// LMEvalTable captures the results table lm_eval prints on its standard
// output when it ends (lm_eval.utils.make_table, a Markdown table per
// "results" and "groups"), which reaches the runner through a pipe of its
// own. The results file is on disk, where every process of the runner's
// uid can rewrite it in place (a native server running model code); a
// score the file holds that the table does not print is not lm_eval's.
type LMEvalTable struct {
	mu   sync.Mutex
	line lineBuffer
	// cols maps the header's column names to their index; nil outside a
	// table.
	cols map[string]int
	name string // the task of the last row that named one
	rows []tableRow
}

type tableRow struct {
	task, filter, metric, value string
}

// maxTableLine bounds a line kept while scanning: a table row is short,
// and output without line breaks must not grow the runner.
const maxTableLine = 4096

// Write scans whole lines; it never fails.
func (p *LMEvalTable) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line.feed(b, maxTableLine, p.scan)
	return len(b), nil
}

// cells splits a Markdown table row "|a|b|" into its trimmed cells.
func cells(line string) ([]string, bool) {
	line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
	if len(line) < 2 || line[0] != '|' || line[len(line)-1] != '|' {
		return nil, false
	}
	parts := strings.Split(line[1:len(line)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts, true
}

func (p *LMEvalTable) scan(line string) {
	c, ok := cells(line)
	if !ok {
		p.cols = nil // a table ends at its first line that is no row
		return
	}
	if len(c) > 0 && (c[0] == "Tasks" || c[0] == "Groups") {
		cols := map[string]int{}
		for i, n := range c {
			if _, dup := cols[n]; !dup {
				cols[n] = i
			}
		}
		for _, need := range []string{"Filter", "Metric", "Value"} {
			if _, ok := cols[need]; !ok {
				p.cols = nil
				return
			}
		}
		p.cols, p.name = cols, ""
		return
	}
	if p.cols == nil || strings.Trim(strings.Join(c, ""), "-:") == "" {
		return // not in a table, or its separator row
	}
	get := func(col string) string {
		if i, ok := p.cols[col]; ok && i < len(c) {
			return c[i]
		}
		return ""
	}
	if n := c[0]; n != "" {
		p.name = n
	}
	p.rows = append(p.rows, tableRow{task: p.name, filter: get("Filter"), metric: get("Metric"), value: get("Value")})
}

// Check says whether every metric of the task the file holds is what
// lm_eval printed: the table's row of that task (by its alias, as lm_eval
// prints it, or its name), metric and filter shows the value to four
// decimals. metrics are "<metric>,<filter>" keys, as LMEvalTask.Metrics.
func (p *LMEvalTable) Check(task, alias string, metrics map[string]float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rows) == 0 {
		return fmt.Errorf("%w: lm_eval printed no results table to check its results file against", ErrNotOwn)
	}
	names := map[string]bool{strings.TrimSpace(task): true}
	if a := strings.TrimSpace(alias); a != "" {
		names[a] = true
	}
	for _, k := range slices.Sorted(maps.Keys(metrics)) {
		metric, filter, _ := strings.Cut(k, ",")
		want := metrics[k]
		var printed []string
		match := false
		for _, r := range p.rows {
			if !names[r.task] || r.metric != metric || r.filter != filter {
				continue
			}
			printed = append(printed, r.value)
			if v, err := strconv.ParseFloat(r.value, 64); err == nil && math.Abs(v-want) <= 0.00005+1e-12 {
				match = true
			}
		}
		switch {
		case match:
		case len(printed) == 0:
			return fmt.Errorf("%w: the results file holds %s %s = %.4f, a row the table lm_eval printed does not have", ErrNotOwn, task, k, want)
		default:
			return fmt.Errorf("%w: the results file says %s %s = %.4f, lm_eval printed %s", ErrNotOwn, task, k, want, strings.Join(printed, ", "))
		}
	}
	return nil
}
