package results

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// realTable is what lm_eval 0.4.12 printed for gsm8k in a real night
// (night.log of the reference corpus; pytablewriter prints 0.0000 as 0).
const realTable = `local-completions ({'model': 'benchkite-test/tiny-llama'}), gen_kwargs: ({}), limit: None, num_fewshot: 5, batch_size: 1
|Tasks|Version|     Filter     |n-shot|  Metric   |   |Value|   |Stderr|
|-----|------:|----------------|-----:|-----------|---|----:|---|-----:|
|gsm8k|      3|flexible-extract|     5|exact_match|↑  |    0|±  |     0|
|     |       |strict-match    |     5|exact_match|↑  |    0|±  |     0|

`

const groupTable = `|      Tasks       |Version|Filter|n-shot|Metric|   |Value |   |Stderr|
|------------------|------:|------|-----:|------|---|-----:|---|-----:|
|mmlu              |      2|none  |      |acc   |↑  |0.6512|±  |0.0038|
| - abstract_algebra|      1|none  |     0|acc   |↑  |0.3100|±  |0.0465|

|      Groups      |Version|Filter|n-shot|Metric|   |Value |   |Stderr|
|------------------|------:|------|------|------|---|-----:|---|-----:|
|mmlu              |      2|none  |      |acc   |↑  |0.6512|±  |0.0038|
`

func TestLMEvalTableCheck(t *testing.T) {
	tests := []struct {
		name         string
		printed      string
		task, alias  string
		metrics      map[string]float64
		wantErr      string
		chunkedWrite bool
	}{
		{name: "real zero scores", printed: realTable, task: "gsm8k", alias: "gsm8k",
			metrics: map[string]float64{"exact_match,flexible-extract": 0, "exact_match,strict-match": 0}},
		{name: "written a byte at a time", printed: realTable, task: "gsm8k", alias: "gsm8k", chunkedWrite: true,
			metrics: map[string]float64{"exact_match,flexible-extract": 0, "exact_match,strict-match": 0}},
		{name: "a rewritten score", printed: realTable, task: "gsm8k", alias: "gsm8k",
			metrics: map[string]float64{"exact_match,flexible-extract": 0.93, "exact_match,strict-match": 0},
			wantErr: "gsm8k exact_match,flexible-extract = 0.9300, lm_eval printed 0"},
		{name: "a metric the table lacks", printed: realTable, task: "gsm8k", alias: "gsm8k",
			metrics: map[string]float64{"exact_match,none": 0.5},
			wantErr: "a row the table lm_eval printed does not have"},
		{name: "no table", printed: "INFO done\n", task: "gsm8k",
			metrics: map[string]float64{"exact_match,strict-match": 0},
			wantErr: "printed no results table"},
		{name: "the table's rows belong to another task", printed: realTable, task: "arc_easy", alias: "arc_easy",
			metrics: map[string]float64{"exact_match,strict-match": 0},
			wantErr: "a row the table lm_eval printed does not have"},
		{name: "four decimals", printed: groupTable, task: "mmlu", alias: "mmlu",
			metrics: map[string]float64{"acc,none": 0.651249}},
		{name: "off in the fourth decimal", printed: groupTable, task: "mmlu", alias: "mmlu",
			metrics: map[string]float64{"acc,none": 0.6514},
			wantErr: "lm_eval printed 0.6512, 0.6512"},
		{name: "a subtask by its alias", printed: groupTable, task: "mmlu_abstract_algebra", alias: " - abstract_algebra",
			metrics: map[string]float64{"acc,none": 0.31}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p LMEvalTable
			if tt.chunkedWrite {
				for i := range len(tt.printed) {
					p.Write([]byte{tt.printed[i]})
				}
			} else {
				io.WriteString(&p, tt.printed)
			}
			err := p.Check(tt.task, tt.alias, tt.metrics)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrNotOwn) {
				t.Fatalf("Check = %v, want an ErrNotOwn containing %q", err, tt.wantErr)
			}
		})
	}
}
