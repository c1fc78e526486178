package openai

import (
	"fmt"
	"regexp"
	"strconv"
)

// questionPattern matches the arithmetic questions of the stand-in gsm8k
// dataset, e.g. "What is 17 + 25?".
var questionPattern = regexp.MustCompile(`What is (-?\d+) ([-+*x×/]) (-?\d+)\?`)

// question is one parsed arithmetic question.
type question struct {
	text string // e.g. "What is 17 + 25?"
	a, b int64
	op   string
}

// lastQuestion finds the last arithmetic question in s: in a few-shot prompt
// that is the one to answer.
func lastQuestion(s string) (question, bool) {
	all := questionPattern.FindAllStringSubmatch(s, -1)
	if len(all) == 0 {
		return question{}, false
	}
	m := all[len(all)-1]
	a, errA := strconv.ParseInt(m[1], 10, 64)
	b, errB := strconv.ParseInt(m[3], 10, 64)
	if errA != nil || errB != nil || (m[2] == "/" && b == 0) {
		return question{}, false
	}
	return question{text: m[0], a: a, b: b, op: m[2]}, true
}

func (q question) result() int64 {
	switch q.op {
	case "+":
		return q.a + q.b
	case "-":
		return q.a - q.b
	case "/":
		return q.a / q.b
	default:
		return q.a * q.b
	}
}

// answer is the model's reply, in the shape gsm8k's filters look for.
func (q question) answer(accuracy float64) string {
	r := q.result()
	if !IsAnsweredCorrectly(q.text, accuracy) {
		r++
	}
	return fmt.Sprintf("%d %s %d = %d. The answer is %d.\n#### %d", q.a, q.op, q.b, r, r, r)
}

// IsAnsweredCorrectly reports whether the server answers the question text
// (e.g. "What is 17 + 25?") correctly at the given accuracy: exactly when
// its QuestionScore is below accuracy. The choice is stable across runs and
// processes, and about accuracy×N of N distinct questions pass.
func IsAnsweredCorrectly(questionText string, accuracy float64) bool {
	return QuestionScore(questionText) < accuracy
}

// QuestionScore hashes a question to [0, 1). Datasets that want their
// measured accuracy to track the configured one closely can pick questions
// whose scores are spread evenly.
func QuestionScore(questionText string) float64 {
	return float64(hashString(questionText)>>11) / (1 << 53)
}
