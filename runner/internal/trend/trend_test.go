package trend

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

// nights returns points labelled #1001, #1002, … with the last one
// highlighted as tonight.
func nights(values ...float64) []Point {
	points := make([]Point, len(values))
	for i, v := range values {
		points[i] = Point{Label: fmt.Sprintf("#%d", 1001+i), Value: v}
	}
	if len(points) > 0 {
		points[len(points)-1].Highlight = true
	}
	return points
}

// goldenCases are also the inputs of the well-formedness test.
var goldenCases = []struct {
	name   string
	title  string
	panels []Panel
}{
	{
		// A change point two nights ago, after a new series began: the
		// limit line, both marks and the hover texts.
		name:  "limit_and_marks",
		title: "minimax_m3-mi355x: regimes",
		panels: []Panel{{
			Title:          "TPOT p50",
			Unit:           "ms",
			Points:         hovered(nights(20.1, 20.4, 19.9, 20.2, 20.0, 20.3, 23.9, 24.1)),
			HigherIsBetter: false,
			Band:           &Band{Low: 19.6, High: 20.6},
			Limit:          ptr(22.1),
			Marks:          []Mark{{Index: 2, Label: "new series", Series: true}, {Index: 6, Label: "change"}},
		}},
	},
	{
		// The picture the runner annotates most builds with: throughput
		// drops below its band tonight while accuracy holds.
		name:  "drop_with_band",
		title: "gpt_oss_120b-mi355x: last 10 nights",
		panels: []Panel{
			{
				Title:          "Output throughput per GPU",
				Unit:           "tok/s",
				Points:         nights(1251.4, 1262.8, 1248.1, 1270.3, 1259.9, 1266.2, 1255.0, 1273.6, 1261.7, 1098.2),
				HigherIsBetter: true,
				Band:           &Band{Low: 1200, High: 1320},
			},
			{
				Title:          "gsm8k exact_match,strict-match",
				Points:         nights(0.9272, 0.9310, 0.9295, 0.9325, 0.9280, 0.9302, 0.9318, 0.9290, 0.9333, 0.9301),
				HigherIsBetter: true,
				Band:           &Band{Low: 0.91, High: 0.95},
			},
		},
	},
	{
		name:  "empty_and_single",
		title: "llama-h200",
		panels: []Panel{
			{Title: "Output throughput per GPU", Unit: "tok/s", HigherIsBetter: true},
			{Title: "TTFT p99", Unit: "ms", Points: nights(412.5)},
		},
	},
	{
		// Nights without a value leave gaps; tonight failed to produce one.
		name: "gaps_and_missing_tonight",
		panels: []Panel{{
			Title:          "Output throughput per GPU",
			Unit:           "tok/s",
			Points:         nights(980, math.NaN(), 1010, 1005, math.Inf(1), 990, math.Inf(-1), 1001, math.NaN()),
			HigherIsBetter: true,
		}},
	},
	{
		name:  "flat_and_negative",
		title: "deltas",
		panels: []Panel{
			{Title: "Flat", Unit: "tok/s", Points: nights(1200, 1200, 1200, 1200)},
			{Title: "Change vs baseline", Unit: "%", Points: nights(-1.2, 0.4, -3.5, -0.8, -7.9), HigherIsBetter: true, Band: &Band{Low: -5, High: 5}},
			{Title: "All missing", Points: nights(math.NaN(), math.NaN())},
		},
	},
	{
		// Sixty nights of dates: labels must thin out, tonight's stays.
		name:   "many_nights",
		title:  "dates",
		panels: []Panel{{Title: "ITL median", Unit: "ms", Points: manyNights(60)}},
	},
	{
		// Recipe names and metric keys can be long: titles are cut, units
		// kept, and long x labels shortened.
		name:  "long_titles",
		title: strings.Repeat("deepseek_r1_0528_fp4-b200-tp8-ep-mtp ", 3),
		panels: []Panel{{
			Title: "output_throughput_per_gpu at concurrency 128, 8k input, 1k output, random dataset",
			Unit:  "tok/s",
			Points: []Point{
				{Label: "2026-01-01 nightly rebuild", Value: 5},
				{Label: "#2", Value: 7},
				{Label: "#3", Value: 6, Highlight: true},
			},
			HigherIsBetter: true,
			Band:           &Band{Low: 6.5, High: 8},
		}},
	},
	{
		// Two past nights whose job failed: hollow red rings, the
		// panel's key, and no ring for the failed night without a value.
		name:  "failed_nights",
		title: "minimax_m3-mi355x: failed nights",
		panels: []Panel{
			{
				Title:          "Output throughput per GPU",
				Unit:           "tok/s",
				Points:         failed(nights(1480, 1470, 1310, 1495, math.NaN(), 1500, 1460, 1490), 2, 4),
				HigherIsBetter: true,
				Band:           &Band{Low: 1440, High: 1530},
			},
			{Title: "gsm8k exact_match,flexible-extract", Points: nights(0.93, 0.94, 0.93, 0.92, 0.93, 0.94, 0.93, 0.93), HigherIsBetter: true},
		},
	},
	{
		name: "no_panels",
	},
}

// failed marks the points at the indexes as nights whose job failed.
func failed(points []Point, at ...int) []Point {
	for _, i := range at {
		points[i].Failed = true
	}
	return points
}

func manyNights(n int) []Point {
	points := make([]Point, n)
	for i := range points {
		points[i] = Point{
			Label: fmt.Sprintf("2026-%02d-%02d", 1+i/28, 1+i%28),
			Value: 20 + 3*math.Sin(float64(i)/5),
		}
	}
	points[n-1].Highlight = true
	return points
}

func render(t *testing.T, title string, panels []Panel) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, title, panels); err != nil {
		t.Fatalf("Render(%q) error = %v", title, err)
	}
	return buf.Bytes()
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := render(t, tc.title, tc.panels)
			path := filepath.Join("testdata", tc.name+".svg")
			testutil.Golden(t, path, got)

		})
	}
}

// element is a decoded SVG element, enough to make assertions on.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// decodeSVG parses the whole document with encoding/xml, failing the test
// on anything that is not well-formed, and returns its elements in order.
func decodeSVG(t *testing.T, doc []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var (
		elems []element
		open  []int // indexes into elems of the enclosing elements
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("decoding SVG: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if tok.Name.Local == "svg" {
				e.attrs["xmlns"] = tok.Name.Space
			}
			elems = append(elems, e)
			open = append(open, len(elems)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				elems[open[len(open)-1]].text += string(tok)
			}
		}
	}
	if len(elems) == 0 || elems[0].name != "svg" {
		t.Fatalf("root element is not <svg>:\n%s", doc)
	}
	return elems
}

func texts(elems []element) []string {
	var out []string
	for _, e := range elems {
		if e.name == "text" {
			out = append(out, e.text)
		}
	}
	return out
}

func count(elems []element, name string) int {
	n := 0
	for _, e := range elems {
		if e.name == name {
			n++
		}
	}
	return n
}

func TestRenderWellFormed(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := render(t, tc.title, tc.panels)
			root := decodeSVG(t, doc)[0]
			if got, want := root.attrs["xmlns"], "http://www.w3.org/2000/svg"; got != want {
				t.Errorf("svg xmlns = %q, want %q", got, want)
			}
			if got, want := root.attrs["viewBox"], fmt.Sprintf("0 0 %s %s", root.attrs["width"], root.attrs["height"]); got != want {
				t.Errorf("svg viewBox = %q, want %q", got, want)
			}
			if got := root.attrs["font-family"]; got != "sans-serif" {
				t.Errorf("svg font-family = %q, want sans-serif", got)
			}
			for _, bad := range []string{"NaN", "Inf", "<script", "@font-face", "<image"} {
				if bytes.Contains(doc, []byte(bad)) {
					t.Errorf("output contains %q", bad)
				}
			}
		})
	}
}

func TestRenderEscapesText(t *testing.T) {
	t.Parallel()
	hostile := []string{
		`</text><script>alert("x")</script>`,
		`a & b <c> 'single' "double"`,
		`]]><!-- -->`,
	}
	var panels []Panel
	for _, h := range hostile {
		panels = append(panels, Panel{
			Title: h,
			Unit:  h,
			Points: []Point{
				{Label: h, Value: 1},
				{Label: "tonight", Value: 2, Highlight: true},
			},
		})
	}
	doc := render(t, hostile[0], panels)
	elems := decodeSVG(t, doc)
	if n := count(elems, "script"); n != 0 {
		t.Errorf("decoded %d <script> elements, want 0", n)
	}
	all := strings.Join(texts(elems), "\n")
	for _, h := range hostile {
		if !strings.Contains(all, h) {
			t.Errorf("text %q not found verbatim in the decoded texts:\n%s", h, all)
		}
	}
}

func TestRenderReplacesUnencodableRunes(t *testing.T) {
	t.Parallel()
	// NUL and U+FFFE cannot appear in XML at all; newlines would break the
	// single-line title.
	doc := render(t, "a\x00b\uFFFEc\nd", nil)
	elems := decodeSVG(t, doc)
	if diff := cmp.Diff(texts(elems), []string{"a b\uFFFDc d", "no data"}); diff != "" {
		t.Errorf("texts diff (-got +want):\n%s", diff)
	}
}

func TestRenderPanels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		points        []Point
		wantPolylines int
		wantCircles   int
		wantNoData    bool
		wantTexts     []string // must all be present
	}{
		{name: "empty", points: nil, wantNoData: true},
		{name: "all non-finite", points: nights(math.NaN(), math.Inf(1)), wantNoData: true},
		{name: "single", points: nights(412.5), wantPolylines: 0, wantCircles: 1, wantTexts: []string{"412.5 ms", "#1001"}},
		{name: "two", points: nights(400, 410), wantPolylines: 1, wantCircles: 2, wantTexts: []string{"410.0 ms"}},
		// The gap splits the line in two; the isolated night keeps its
		// marker but draws no line.
		{name: "gap", points: nights(1, 2, math.NaN(), 3, 4, math.NaN(), 5), wantPolylines: 2, wantCircles: 5},
		{name: "tonight missing", points: nights(1, 2, 3, math.NaN()), wantPolylines: 1, wantCircles: 3, wantTexts: []string{"no value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			elems := decodeSVG(t, render(t, "", []Panel{{Title: "TTFT p99", Unit: "ms", Points: tt.points}}))
			if got := count(elems, "polyline"); got != tt.wantPolylines {
				t.Errorf("polylines = %d, want %d", got, tt.wantPolylines)
			}
			if got := count(elems, "circle"); got != tt.wantCircles {
				t.Errorf("circles = %d, want %d", got, tt.wantCircles)
			}
			all := texts(elems)
			if got := contains(all, "no data"); got != tt.wantNoData {
				t.Errorf("shows \"no data\" = %v, want %v; texts %q", got, tt.wantNoData, all)
			}
			for _, want := range tt.wantTexts {
				if !contains(all, want) {
					t.Errorf("text %q missing; texts %q", want, all)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestRenderThinsXLabels(t *testing.T) {
	t.Parallel()
	points := manyNights(60)
	elems := decodeSVG(t, render(t, "", []Panel{{Title: "ITL", Points: points}}))
	var labels []string
	for _, txt := range texts(elems) {
		if strings.HasPrefix(txt, "2026-") {
			labels = append(labels, txt)
		}
	}
	if len(labels) < 4 || len(labels) > 10 {
		t.Errorf("shows %d of 60 date labels, want 4 to 10: %q", len(labels), labels)
	}
	if last, tonight := labels[len(labels)-1], points[59].Label; last != tonight {
		t.Errorf("last x label = %q, want tonight's %q", last, tonight)
	}
}

func TestRenderHighlightColour(t *testing.T) {
	t.Parallel()
	band := &Band{Low: 90, High: 110}
	tests := []struct {
		name           string
		tonight        float64
		higherIsBetter bool
		band           *Band
		want           string
	}{
		{name: "no band", tonight: 50, higherIsBetter: true, want: colorHighlight},
		{name: "inside band", tonight: 100, higherIsBetter: true, band: band, want: colorHighlight},
		{name: "throughput drop", tonight: 80, higherIsBetter: true, band: band, want: colorWorse},
		{name: "throughput gain", tonight: 120, higherIsBetter: true, band: band, want: colorBetter},
		{name: "latency rise", tonight: 120, higherIsBetter: false, band: band, want: colorWorse},
		{name: "latency fall", tonight: 80, higherIsBetter: false, band: band, want: colorBetter},
		{name: "reversed band", tonight: 80, higherIsBetter: true, band: &Band{Low: 110, High: 90}, want: colorWorse},
		{name: "unusable band", tonight: 80, higherIsBetter: true, band: &Band{Low: math.NaN(), High: 90}, want: colorHighlight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			panel := Panel{Title: "m", Points: nights(100, 101, tt.tonight), HigherIsBetter: tt.higherIsBetter, Band: tt.band}
			elems := decodeSVG(t, render(t, "", []Panel{panel}))
			var circles []element
			for _, e := range elems {
				if e.name == "circle" {
					circles = append(circles, e)
				}
			}
			if len(circles) != 3 {
				t.Fatalf("circles = %d, want 3", len(circles))
			}
			if got := circles[2].attrs["fill"]; got != tt.want {
				t.Errorf("tonight's marker fill = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderKeepsUnitOfLongTitle(t *testing.T) {
	t.Parallel()
	panel := Panel{Title: strings.Repeat("very long metric name ", 10), Unit: "tok/s", Points: nights(1)}
	title := texts(decodeSVG(t, render(t, "", []Panel{panel})))[0]
	if !strings.HasSuffix(title, "… (tok/s)") {
		t.Errorf("panel title = %q, want it cut with … and ending in the unit", title)
	}
	if n := len([]rune(title)); n > 60 {
		t.Errorf("panel title has %d runes, want at most 60 to fit beside the legend", n)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestRenderWriteError(t *testing.T) {
	t.Parallel()
	errDiskFull := errors.New("disk full")
	err := Render(failingWriter{err: errDiskFull}, "t", nil)
	if !errors.Is(err, errDiskFull) {
		t.Errorf("Render() error = %v, want it to wrap %v", err, errDiskFull)
	}
}

func ptr(v float64) *float64 { return &v }

// hovered gives each point a hover text naming it.
func hovered(points []Point) []Point {
	for i := range points {
		points[i].Hover = fmt.Sprintf("%s: %.1f ms <vLLM & co>", points[i].Label, points[i].Value)
	}
	return points
}

func TestRenderFailedNights(t *testing.T) {
	t.Parallel()
	const hover = "#1002: 2.0 ms <vLLM & co>"
	tests := []struct {
		name       string
		points     []Point
		wantRings  []string // hover titles of the rings, in order
		wantKey    bool
		wantTitles []string // every point's hover title, in order
	}{
		{
			name:       "none failed",
			points:     nights(1, 2, 3),
			wantTitles: []string{"#1001: 1.00", "#1002: 2.00", "#1003: 3.00"},
		},
		{
			name:       "one failed night",
			points:     failed(nights(1, 2, 3), 1),
			wantRings:  []string{"#1002: 2.00 · job failed"},
			wantKey:    true,
			wantTitles: []string{"#1001: 1.00", "#1002: 2.00 · job failed", "#1003: 3.00"},
		},
		{
			name:       "failed night with its own hover, escaped",
			points:     failed([]Point{{Label: "#1001", Value: 1}, {Label: "#1002", Value: 2, Hover: hover}, {Label: "tonight", Value: 3, Highlight: true}}, 1),
			wantRings:  []string{hover + " · job failed"},
			wantKey:    true,
			wantTitles: []string{"#1001: 1.00", hover + " · job failed", "tonight: 3.00"},
		},
		{
			name:       "failed night without a value",
			points:     failed(nights(1, math.NaN(), 3), 1),
			wantTitles: []string{"#1001: 1.00", "#1003: 3.00"},
		},
		{
			name:       "tonight stays tonight",
			points:     failed(nights(1, 2, 3), 2),
			wantTitles: []string{"#1001: 1.00", "#1002: 2.00", "#1003: 3.00"},
		},
		{
			name:       "every past night failed",
			points:     failed(nights(1, 2, 3), 0, 1),
			wantRings:  []string{"#1001: 1.00 · job failed", "#1002: 2.00 · job failed"},
			wantKey:    true,
			wantTitles: []string{"#1001: 1.00 · job failed", "#1002: 2.00 · job failed", "#1003: 3.00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := render(t, "", []Panel{{Title: "TTFT p99", Unit: "ms", Points: tt.points}})
			elems := decodeSVG(t, doc)
			var rings, titles []string
			keys := 0
			for i, e := range elems {
				if e.name != "circle" {
					continue
				}
				if e.attrs["class"] == "key-failed" {
					keys++
					continue
				}
				if i+1 >= len(elems) || elems[i+1].name != "title" {
					t.Fatalf("point circle %v has no title", e.attrs)
				}
				title := elems[i+1].text
				titles = append(titles, title)
				if e.attrs["class"] != "night failed" {
					continue
				}
				rings = append(rings, title)
				if e.attrs["fill"] != "#ffffff" || e.attrs["stroke"] != colorWorse {
					t.Errorf("failed night %q drawn with fill %q stroke %q, want a hollow %s ring", title, e.attrs["fill"], e.attrs["stroke"], colorWorse)
				}
			}
			if diff := cmp.Diff(tt.wantRings, rings); diff != "" {
				t.Errorf("failed-night rings diff (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTitles, titles); diff != "" {
				t.Errorf("hover titles diff (-want +got):\n%s", diff)
			}
			wantKeys := 0
			if tt.wantKey {
				wantKeys = 1
			}
			if keys != wantKeys || contains(texts(elems), failedKey) != tt.wantKey {
				t.Errorf("key: %d ring(s), text %v; want it shown = %v", keys, contains(texts(elems), failedKey), tt.wantKey)
			}
		})
	}
}

func TestWritePageFailedKey(t *testing.T) {
	t.Parallel()
	plain := Panel{Title: "m", Points: nights(1, 2, 3)}
	withFailed := Panel{Title: "m", Points: failed(nights(1, 2, 3), 0)}
	tests := []struct {
		name string
		page Page
		want bool
	}{
		{"no failed night", Page{Sections: []Section{{ID: "a", Panels: []Panel{plain}}}}, false},
		{"a recipe's failed night", Page{Sections: []Section{{ID: "a", Panels: []Panel{plain}}, {ID: "b", Panels: []Panel{plain, withFailed}}}}, true},
		{"the overview's failed night", Page{Overview: &Section{ID: "o", Panels: []Panel{withFailed}}, Sections: []Section{{ID: "a", Panels: []Panel{plain}}}}, true},
		{"only tonight failed", Page{Sections: []Section{{ID: "a", Panels: []Panel{{Title: "m", Points: failed(nights(1, 2), 1)}}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := WritePage(&b, tt.page); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), `<span class="k failed"></span> failed night`); got != tt.want {
				t.Errorf("page legend has the failed-night key = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPlaceLabelKeepsNeighbourVisible: when tonight's value cannot avoid
// every line, it still must not hide the night before (a failed night's
// ring, say). The geometry is the trend page's throughput drop.
func TestPlaceLabelKeepsNeighbourVisible(t *testing.T) {
	t.Parallel()
	const size = 12
	f := frameOf(0)
	px, py := 601.6, 153.3
	before := segment{px, py, 564.8, 144.4}
	w := textWidth("162.5 tok/s", size, true)
	st := placeLabel(f, px, py, w, size, []segment{before})
	left := st.x
	if st.anchor == "end" {
		left -= w
	}
	top, bottom := st.y-0.8*size, st.y+0.2*size
	if hidesEnd([]segment{before}, left, top, left+w, bottom) {
		t.Errorf("label at (%.1f, %.1f) %s covers the night at (%.1f, %.1f)", st.x, st.y, st.anchor, before.x2, before.y2)
	}
	if top < f.top || bottom > f.bottom || left < edgeInset || left+w > width-edgeInset {
		t.Errorf("label [%.1f, %.1f]×[%.1f, %.1f] leaves the plot", left, left+w, top, bottom)
	}
}

// Bidi controls from a recipe's or a night's text (a name, a label, a
// hover, a note) would reorder what a reader of the page sees; every one
// is written by name instead, in the charts and the page around them.
func TestWritePageShowsBidiControls(t *testing.T) {
	t.Parallel()
	const rlo = "\u202e"
	evil := "ok" + rlo + "gnp.exe" + "\u2066x\u2069\u200f"
	p := Page{Title: evil, Subtitle: evil, Sections: []Section{{ID: "a", Title: evil, Subtitle: evil, Note: evil, Verdict: "pass",
		Panels: []Panel{{Title: evil, Unit: evil, Points: []Point{{Label: evil, Value: 1, Hover: evil}, {Label: evil, Value: 2, Highlight: true}}}}}}}
	var b bytes.Buffer
	if err := WritePage(&b, p); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, r := range []rune{'\u202e', '\u2066', '\u2069', '\u200f'} {
		if strings.ContainsRune(page, r) {
			t.Errorf("the page holds U+%04X", r)
		}
	}
	if !strings.Contains(page, "ok[U+202E]gnp.exe") {
		t.Errorf("the page does not name the control:\n%.600s", page)
	}
}
