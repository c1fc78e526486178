package trend

import (
	"bytes"
	"fmt"
	"io"
	"math"
)

// Point is one night of one metric.
type Point struct {
	// Label names the night on the x-axis, e.g. a build number "#1234" or a
	// date.
	Label string
	// Value is the measurement; NaN or ±Inf mean the night has no value and
	// leave a gap in the line.
	Value float64
	// Highlight marks tonight's point: drawn in its own colour with its
	// value written next to it.
	Highlight bool
	// Hover is shown when the pointer rests on the point (an SVG title):
	// the night, its value, its vLLM commit.
	Hover string
	// Failed marks a past night whose job failed: it measured, but a
	// reader must not take it for a good night. It is drawn as a hollow
	// red ring and its hover says so; tonight's point ignores it.
	Failed bool
}

// Mark is a vertical line before one night: where a change point is, or
// where the recipe changed or a regression was accepted (a known change).
type Mark struct {
	// Index is the first night after the line.
	Index int
	// Label is written at the top of the line, e.g. "change" or "recipe changed".
	Label string
	// Series marks a known change (grey) rather than one found (red).
	Series bool
}

// Band is an allowed range of values, e.g. a baseline ± tolerance.
type Band struct {
	Low, High float64
}

// Panel is one metric's chart.
type Panel struct {
	Title string
	// Unit is shown after the title and the highlighted value, e.g. "tok/s".
	Unit string
	// Points are ordered oldest first.
	Points []Point
	// HigherIsBetter tells which side of Band is a regression; it is also
	// written in the panel header.
	HigherIsBetter bool
	// Band, when set, is shaded and always kept in view.
	Band *Band
	// Limit, when set, is drawn as a dashed line: the value beyond which
	// tonight fails.
	Limit *float64
	// Marks are change points, found and known, drawn as vertical lines.
	Marks []Mark
}

// Render writes one SVG image titled title, with panels stacked top to
// bottom. Panels without finite values say "no data" instead of a chart.
func Render(w io.Writer, title string, panels []Panel) error {
	var c canvas
	height := len(panels) * panelHeight
	top := 0
	if title != "" {
		top = headerHeight
	}
	if len(panels) == 0 {
		height = panelHeight
	}
	height += top

	c.printf(`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n",
		width, height, width, height)
	c.printf("<title>%s</title>\n", escape(cleanText(title)))
	// An explicit background keeps the chart readable in dark themes and
	// in viewers that show transparency as black.
	c.printf(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	if title != "" {
		c.text(textStyle{x: padding, y: 24, size: 16, bold: true, fill: colorText},
			truncate(cleanText(title), charsThatFit(width-2*padding, 16, true)))
	}
	if len(panels) == 0 {
		c.noData(frameOf(top))
	}
	for i, p := range panels {
		drawPanel(&c, top+i*panelHeight, p)
	}
	c.printf("</svg>\n")

	if _, err := w.Write(c.buf.Bytes()); err != nil {
		return fmt.Errorf("write trend svg: %w", err)
	}
	return nil
}

// Layout in user units; the viewBox lets viewers scale it.
const (
	width        = 640
	panelHeight  = 200
	headerHeight = 36
	padding      = 12 // outer left/right padding for titles
	plotLeft     = 68 // room for y tick labels
	plotRight    = width - 20
	plotTopInset = 36 // panel title and legend above the plot
	plotBottomIn = 36 // x labels below the plot and the gap to the next panel

	edgeInset = 4 // closest any text comes to the image border

	maxLabelRunes = 14
)

// Colours: a neutral series, a highlight that reads as "tonight", and red or
// green when tonight leaves the band on the bad or the good side.
const (
	colorText      = "#222222"
	colorMuted     = "#666666"
	colorGrid      = "#e3e3e3"
	colorFrame     = "#bbbbbb"
	colorSeries    = "#1f77b4"
	colorBand      = "#2ca02c"
	colorHighlight = "#ff7f0e"
	colorWorse     = "#d62728"
	colorBetter    = "#2ca02c"
)

// frame is a panel's plot area.
type frame struct {
	top, bottom, left, right float64
	panelTop                 float64
}

func frameOf(panelTop int) frame {
	return frame{
		panelTop: float64(panelTop),
		top:      float64(panelTop + plotTopInset),
		bottom:   float64(panelTop + panelHeight - plotBottomIn),
		left:     plotLeft,
		right:    plotRight,
	}
}

func drawPanel(c *canvas, panelTop int, p Panel) {
	f := frameOf(panelTop)
	band := validBand(p.Band)
	drawPanelHeader(c, f, p, band != nil)

	var values []float64
	for _, pt := range p.Points {
		if finite(pt.Value) {
			values = append(values, pt.Value)
		}
	}
	if len(values) == 0 {
		c.noData(f)
		return
	}
	if band != nil {
		values = append(values, band.Low, band.High)
	}
	if p.Limit != nil && finite(*p.Limit) {
		values = append(values, *p.Limit)
	}
	ax := niceAxis(valueRange(values))
	y := func(v float64) float64 {
		return f.bottom - (v-ax.min())/(ax.max()-ax.min())*(f.bottom-f.top)
	}
	// Each night gets an equal slot with its point in the middle, so the
	// first and last labels have room and a single night sits centred.
	slot := (f.right - f.left) / float64(len(p.Points))
	x := func(i int) float64 { return f.left + (float64(i)+0.5)*slot }

	if band != nil {
		c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.15"/>`+"\n",
			num(f.left), num(y(band.High)), num(f.right-f.left), num(y(band.Low)-y(band.High)), colorBand)
	}
	for _, t := range ax.ticks {
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"/>`+"\n",
			num(f.left), num(y(t)), num(f.right), num(y(t)), colorGrid)
		c.text(textStyle{x: f.left - 6, y: y(t) + 4, size: 11, fill: colorMuted, anchor: "end"},
			formatFixed(t, ax.step.decimals()))
	}
	c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" stroke-width="1"/>`+"\n",
		num(f.left), num(f.top), num(f.right-f.left), num(f.bottom-f.top), colorFrame)

	if p.Limit != nil && finite(*p.Limit) {
		c.printf(`<line class="limit" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"><title>limit %s</title></line>`+"\n",
			num(f.left), num(y(*p.Limit)), num(f.right), num(y(*p.Limit)), colorWorse, escape(formatFixed(*p.Limit, ax.step.decimals()+1)))
	}
	for _, m := range p.Marks {
		if m.Index <= 0 || m.Index >= len(p.Points) {
			continue
		}
		mx := f.left + float64(m.Index)*slot
		color := colorWorse
		if m.Series {
			color = colorMuted
		}
		c.printf(`<line class="mark" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="3 3"/>`+"\n",
			num(mx), num(f.top), num(mx), num(f.bottom), color)
		c.text(textStyle{x: mx + 3, y: f.top + 11, size: 10, fill: color, anchor: "start", halo: true}, truncate(cleanText(m.Label), 2*maxLabelRunes))
	}

	drawXLabels(c, f, p.Points, slot, x)
	drawFailedKey(c, f, p)
	drawSeries(c, p.Points, x, y)
	drawHighlights(c, f, p, band, ax, x, y)
}

func drawPanelHeader(c *canvas, f frame, p Panel, hasBand bool) {
	legend := "lower is better"
	if p.HigherIsBetter {
		legend = "higher is better"
	}
	if hasBand {
		legend += " · shaded: allowed range"
	}
	legendWidth := textWidth(legend, 11, false)
	// A long title is cut before the unit, which matters more than the
	// tail of a metric name.
	var unit string
	if u := cleanText(p.Unit); u != "" {
		unit = " (" + truncate(u, maxLabelRunes) + ")"
	}
	room := plotRight - padding - legendWidth - 16 - textWidth(unit, 14, true)
	title := truncate(cleanText(p.Title), charsThatFit(room, 14, true)) + unit
	c.text(textStyle{x: padding, y: f.panelTop + 22, size: 14, bold: true, fill: colorText}, title)
	c.text(textStyle{x: plotRight, y: f.panelTop + 22, size: 11, fill: colorMuted, anchor: "end"}, legend)
}

// drawFailedKey explains the failed nights' rings under the x labels, in
// the panel's bottom margin, so that the header keeps its room for the
// title. Only a panel that draws a failed night has it.
func drawFailedKey(c *canvas, f frame, p Panel) {
	if !hasFailed(p) {
		return
	}
	const y = 30 // baseline below the plot; the x labels sit at 16
	c.printf(`<circle class="key-failed" cx="%s" cy="%s" r="3.5" fill="#ffffff" stroke="%s" stroke-width="2"/>`+"\n",
		num(f.left+4), num(f.bottom+y-3.5), colorWorse)
	c.text(textStyle{x: f.left + 12, y: f.bottom + y, size: 10, fill: colorMuted}, failedKey)
}

// failedKey is the text of a panel's key for the failed nights' rings.
const failedKey = "a night whose job failed"

// hasFailed says whether the panel draws a failed night: a past night with
// a value whose job failed.
func hasFailed(p Panel) bool {
	for _, pt := range p.Points {
		if pt.Failed && !pt.Highlight && finite(pt.Value) {
			return true
		}
	}
	return false
}

// drawXLabels labels every k-th night, counting back from the newest so
// that tonight is always labelled, with k chosen so labels do not touch.
// Labels that would run off the image are pulled inside it; one that would
// then touch its neighbour is left out.
func drawXLabels(c *canvas, f frame, points []Point, slot float64, x func(int) float64) {
	const (
		size = 10
		gap  = 8
	)
	labels := make([]string, len(points))
	widest := 0.0
	for i, pt := range points {
		labels[i] = truncate(cleanText(pt.Label), maxLabelRunes)
		widest = max(widest, textWidth(labels[i], size, pt.Highlight))
	}
	every := max(1, int(math.Ceil((widest+gap)/slot)))

	type placed struct {
		i           int
		left, right float64
	}
	var shown []placed // newest first
	for i := len(points) - 1; i >= 0; i -= every {
		if labels[i] == "" {
			continue
		}
		w := textWidth(labels[i], size, points[i].Highlight)
		left := x(i) - w/2
		left = min(left, width-edgeInset-w)
		left = max(left, edgeInset)
		if n := len(shown); n > 0 && left+w+gap > shown[n-1].left {
			continue
		}
		shown = append(shown, placed{i: i, left: left, right: left + w})
	}
	for k := len(shown) - 1; k >= 0; k-- {
		l := shown[k]
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"/>`+"\n",
			num(x(l.i)), num(f.bottom), num(x(l.i)), num(f.bottom+4), colorFrame)
		c.text(textStyle{x: (l.left + l.right) / 2, y: f.bottom + 16, size: size, fill: colorMuted, anchor: "middle", bold: points[l.i].Highlight},
			labels[l.i])
	}
}

// drawSeries draws the line, broken where a night has no value, and a
// marker on every value.
func drawSeries(c *canvas, points []Point, x func(int) float64, y func(float64) float64) {
	var run []string
	flush := func() {
		if len(run) > 1 {
			c.printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"/>`+"\n",
				joinSpace(run), colorSeries)
		}
		run = run[:0]
	}
	for i, pt := range points {
		if !finite(pt.Value) {
			flush()
			continue
		}
		run = append(run, num(x(i))+","+num(y(pt.Value)))
	}
	flush()
	for i, pt := range points {
		switch {
		case !finite(pt.Value) || pt.Highlight:
		case pt.Failed:
			// Hollow, so that it reads apart from tonight's filled red
			// point when tonight regressed too.
			c.printf(`<circle class="night failed" cx="%s" cy="%s" r="4" fill="#ffffff" stroke="%s" stroke-width="2">%s</circle>`+"\n",
				num(x(i)), num(y(pt.Value)), colorWorse, hoverTitle(pt))
		default:
			c.printf(`<circle class="night" cx="%s" cy="%s" r="3" fill="%s">%s</circle>`+"\n", num(x(i)), num(y(pt.Value)), colorSeries, hoverTitle(pt))
		}
	}
}

// validBand returns b ordered low to high, or nil when it cannot be drawn.
func validBand(b *Band) *Band {
	if b == nil || !finite(b.Low) || !finite(b.High) {
		return nil
	}
	return &Band{Low: min(b.Low, b.High), High: max(b.Low, b.High)}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func joinSpace(parts []string) string {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

// hoverTitle is a point's SVG title, which browsers show on hover.
func hoverTitle(pt Point) string {
	h := pt.Hover
	if h == "" {
		h = pt.Label + ": " + formatFixed(pt.Value, 2)
	}
	if pt.Failed && !pt.Highlight {
		h += " · job failed"
	}
	return "<title>" + escape(cleanText(h)) + "</title>"
}
