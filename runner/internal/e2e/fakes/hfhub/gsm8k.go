package hfhub

import (
	"encoding/json"
	"fmt"
	"strings"
)

// GSM8KRow is one row of gsm8k: a question and an answer whose last line
// is "#### N", as lm-eval's gsm8k task reads it.
type GSM8KRow struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// GSM8K is a gsm8k-shaped repository, "openai/gsm8k" with the "main"
// config that lm-eval's gsm8k task loads: arithmetic questions of the
// form "What is A + B?", which the OpenAI stand-in answers. train holds
// the few-shot examples, test the questions scored.
func GSM8K(train, test int) (Repo, []GSM8KRow) {
	rows := func(n, seed int) []GSM8KRow {
		out := make([]GSM8KRow, n)
		for i := range n {
			a, b := 3+(i*37+seed*11)%90, 2+(i*53+seed*7)%80
			out[i] = GSM8KRow{
				Question: fmt.Sprintf("Sam has %d apples and buys %d more. What is %d + %d?", a, b, a, b),
				Answer:   fmt.Sprintf("Sam has %d + %d = %d apples.\n#### %d", a, b, a+b, a+b),
			}
		}
		return out
	}
	testRows := rows(test, 1)
	readme := `---
configs:
- config_name: main
  data_files:
  - split: train
    path: main/train.jsonl
  - split: test
    path: main/test.jsonl
---
# gsm8k-shaped test set
`
	return Repo{ID: "openai/gsm8k", Files: map[string][]byte{
		"README.md":        []byte(readme),
		"main/train.jsonl": jsonl(rows(train, 2)),
		"main/test.jsonl":  jsonl(testRows),
	}}, testRows
}

func jsonl(rows []GSM8KRow) []byte {
	var b strings.Builder
	for _, r := range rows {
		line, _ := json.Marshal(r)
		b.Write(line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
