package trend

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/benchkite/benchkite/internal/untrusted"
)

// canvas accumulates the SVG so that Render makes a single Write.
type canvas struct {
	buf bytes.Buffer
}

func (c *canvas) printf(format string, args ...any) {
	fmt.Fprintf(&c.buf, format, args...)
}

type textStyle struct {
	x, y   float64
	size   int
	bold   bool
	fill   string
	anchor string // "start" when empty
	// halo outlines the glyphs in white so text stays legible where it
	// crosses a line.
	halo bool
}

// text writes s, which is escaped here and nowhere else.
func (c *canvas) text(st textStyle, s string) {
	c.printf(`<text x="%s" y="%s" font-size="%d" fill="%s"`, num(st.x), num(st.y), st.size, st.fill)
	if st.anchor != "" && st.anchor != "start" {
		c.printf(` text-anchor="%s"`, st.anchor)
	}
	if st.bold {
		c.printf(` font-weight="bold"`)
	}
	if st.halo {
		c.printf(` stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"`)
	}
	c.printf(">%s</text>\n", escape(s))
}

func (c *canvas) noData(f frame) {
	c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="#f7f7f7" stroke="%s" stroke-width="1" stroke-dasharray="4 3"/>`+"\n",
		num(f.left), num(f.top), num(f.right-f.left), num(f.bottom-f.top), colorFrame)
	c.text(textStyle{x: (f.left + f.right) / 2, y: (f.top+f.bottom)/2 + 5, size: 14, fill: colorMuted, anchor: "middle"}, "no data")
}

// num formats a coordinate with one decimal, which is finer than a pixel
// and keeps the output stable across platforms.
func num(v float64) string { return formatFixed(v, 1) }

// escape makes s safe as XML character data and attribute text; runes XML
// cannot carry become U+FFFD.
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(untrusted.ShowBidi(s))) // a strings.Builder never fails
	return b.String()
}

// cleanText turns control characters (newlines, tabs) into spaces: SVG
// text is a single line. Bidi controls, which would reorder what a reader
// sees (a recipe name, a vLLM commit, a gate's message), are written by
// name ("[U+202E]").
func cleanText(s string) string {
	return untrusted.ShowBidi(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	rs := []rune(s)[:n-1]
	// Cut at a word's end when one is in the second half, so a title
	// reads "p99 TTFT of the…" rather than "p99 TTFT of th…".
	if rs[len(rs)-1] != ' ' && (n-1 >= len([]rune(s)) || []rune(s)[n-1] != ' ') {
		for i := len(rs) - 1; i >= (n-1)/2; i-- {
			if rs[i] == ' ' {
				rs = rs[:i]
				break
			}
		}
	}
	return strings.TrimRight(string(rs), " ,;:·-") + "…"
}

// Average advance of sans-serif glyphs per em. Real fonts vary; these err
// on the wide side so estimated text never overlaps.
const (
	emRegular = 0.58
	emBold    = 0.64
)

func textWidth(s string, size int, bold bool) float64 {
	em := emRegular
	if bold {
		em = emBold
	}
	return float64(utf8.RuneCountInString(s)) * float64(size) * em
}

func charsThatFit(room float64, size int, bold bool) int {
	em := emRegular
	if bold {
		em = emBold
	}
	return max(1, int(room/(float64(size)*em)))
}
