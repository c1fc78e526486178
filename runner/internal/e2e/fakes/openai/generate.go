package openai

import (
	"hash/fnv"
	"regexp"
	"strings"
)

// sampling holds the request fields that shape one generation.
type sampling struct {
	maxTokens   int
	minTokens   int
	ignoreEOS   bool
	stop        []string
	temperature float64
	seed        int64
}

// generation is the planned output of one choice: steps[i] is the text
// produced by token i. Trailing steps may be empty when a stop string cut
// the text short; they still count as generated tokens.
type generation struct {
	steps        []string
	finishReason string
	stopReason   any // nil, or the stop string that ended the text
}

func (g generation) text() string { return strings.Join(g.steps, "") }

var tokenPattern = regexp.MustCompile(`\s*\S+`)

// fillerWords is the vocabulary of everything that is not an arithmetic
// answer.
var fillerWords = strings.Fields(`the of and to in is that for it as with was on be by at this from
or an are which but not have one all were can has more their will there if about out so
what up its into them than only other new some could time these two may then do first any
my now such like our over even most made after also did many before must through back years
where much your way well down should because each just those people how too little state good
very make world still own see men work long get here between both life being under never day
same another know while last might great old year off come since against go came right used
take three model token server answer number value small large fast slow early late open close`)

// plan decides the full output of one choice before any token is sent, so
// streaming and non-streaming responses agree exactly.
func (h *handler) plan(promptText string, promptID uint64, chat bool, choice int, s sampling) generation {
	seed := promptID
	if s.temperature > 0 {
		// Sampling varies per choice and per request seed; greedy does not.
		seed = mix64(seed ^ uint64(choice+1)*0x9e3779b97f4a7c15 ^ uint64(s.seed))
	}
	words := newWordStream(seed)

	var natural string
	if q, ok := lastQuestion(promptText); ok {
		natural = q.answer(h.cfg.Accuracy)
	} else {
		n := 8 + int(mix64(seed)%40)
		natural = words.take(n) + "."
	}
	if !chat && promptText != "" && !strings.HasSuffix(promptText, " ") && !strings.HasSuffix(promptText, "\n") {
		natural = " " + natural
	}
	tokens := tokenPattern.FindAllString(natural, -1)

	finish := "stop"
	switch {
	case s.ignoreEOS:
		tokens = extend(tokens, s.maxTokens, words)
		finish = "length"
	case len(tokens) < s.minTokens:
		tokens = extend(tokens, s.minTokens, words)
	}
	if len(tokens) > s.maxTokens {
		tokens = tokens[:s.maxTokens]
		finish = "length"
	}
	return applyStop(generation{steps: tokens, finishReason: finish}, s.stop)
}

// extend appends filler tokens until there are n.
func extend(tokens []string, n int, words *wordStream) []string {
	for len(tokens) < n {
		sep := " "
		if len(tokens) == 0 {
			sep = ""
		}
		tokens = append(tokens, sep+words.next())
	}
	return tokens
}

// applyStop cuts the text before the first stop string. Like vLLM, the
// token that completed the stop string is still counted as generated.
func applyStop(g generation, stops []string) generation {
	stops = nonEmpty(stops)
	if len(stops) == 0 {
		return g
	}
	var acc strings.Builder
	for i, step := range g.steps {
		acc.WriteString(step)
		text := acc.String()
		cut, which := -1, ""
		for _, s := range stops {
			if idx := strings.Index(text, s); idx >= 0 && (cut < 0 || idx < cut) {
				cut, which = idx, s
			}
		}
		if cut < 0 {
			continue
		}
		steps := make([]string, i+1)
		pos := 0
		for j := range steps {
			end := min(pos+len(g.steps[j]), cut)
			if end > pos {
				steps[j] = text[pos:end]
			}
			pos += len(g.steps[j])
		}
		return generation{steps: steps, finishReason: "stop", stopReason: which}
	}
	return g
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// wordStream yields deterministic filler words.
type wordStream struct{ state uint64 }

func newWordStream(seed uint64) *wordStream { return &wordStream{state: seed} }

func (w *wordStream) next() string {
	w.state += 0x9e3779b97f4a7c15
	return fillerWords[mix64(w.state)%uint64(len(fillerWords))]
}

func (w *wordStream) take(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = w.next()
	}
	return strings.Join(out, " ")
}

// mix64 is the splitmix64 finaliser: it spreads every input bit over the
// whole output.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return mix64(h.Sum64())
}
