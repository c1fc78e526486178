package trend

// drawHighlights marks tonight's point last so it sits on top, with its
// value written next to it where the text crosses no line.
func drawHighlights(c *canvas, f frame, p Panel, band *Band, ax axis, x func(int) float64, y func(float64) float64) {
	const size = 12
	for i, pt := range p.Points {
		if !pt.Highlight {
			continue
		}
		if !finite(pt.Value) {
			const msg = "no value"
			w := textWidth(msg, size, true)
			left := max(f.left+edgeInset, min(x(i)-w/2, f.right-edgeInset-w))
			c.text(textStyle{x: left + w/2, y: f.bottom - 8, size: size, bold: true, fill: colorWorse, anchor: "middle", halo: true}, msg)
			continue
		}
		color := highlightColor(pt.Value, band, p.HigherIsBetter)
		px, py := x(i), y(pt.Value)
		c.printf(`<circle class="night tonight" cx="%s" cy="%s" r="5.5" fill="%s" stroke="#ffffff" stroke-width="1.5">%s</circle>`+"\n", num(px), num(py), color, hoverTitle(pt))

		label := formatFixed(pt.Value, ax.step.decimals()+1)
		if unit := cleanText(p.Unit); unit != "" {
			label += " " + unit
		}
		var lines []segment
		for _, j := range []int{i - 1, i + 1} {
			if j >= 0 && j < len(p.Points) && finite(p.Points[j].Value) {
				lines = append(lines, segment{px, py, x(j), y(p.Points[j].Value)})
			}
		}
		style := placeLabel(f, px, py, textWidth(label, size, true), size, lines)
		style.size, style.bold, style.fill, style.halo = size, true, color, true
		c.text(style, label)
	}
}

// segment is a line from (x1, y1) to (x2, y2).
type segment struct{ x1, y1, x2, y2 float64 }

// placeLabel picks where a w-wide label for the point (px, py) goes: the
// first of eight spots around it (toward the middle of the plot first) that
// stays in the plot vertically, in the image horizontally, and crosses none
// of lines; when every one crosses a line, the first that fits and hides
// no neighbouring night (the far end of a line), which may be a failed
// night's ring; else the first that fits.
func placeLabel(f frame, px, py, w float64, size int, lines []segment) textStyle {
	const offset = 9
	h := float64(size)
	toward, away := 1.0, -1.0 // right, left
	if px > (f.left+f.right)/2 {
		toward, away = -1, 1
	}
	var fallback, clear *textStyle
	for _, side := range []float64{toward, away} {
		// Baselines above, below and level with the point.
		for _, base := range []float64{py - offset, py + offset + h, py + h*0.35} {
			st := textStyle{x: px + side*offset, y: base, anchor: "start"}
			left := st.x
			if side < 0 {
				st.anchor, left = "end", st.x-w
			}
			top, bottom := base-h*0.8, base+h*0.2
			if top < f.top || bottom > f.bottom || left < edgeInset || left+w > width-edgeInset {
				continue
			}
			if fallback == nil {
				fallback = &st
			}
			if clear == nil && !hidesEnd(lines, left, top, left+w, bottom) {
				clear = &st
			}
			if !crossesAny(lines, left, top, left+w, bottom) {
				return st
			}
		}
	}
	if clear != nil {
		return *clear
	}
	if fallback != nil {
		return *fallback
	}
	// Nothing fits (a tiny plot): above, toward the middle.
	if toward < 0 {
		return textStyle{x: px - offset, y: py - offset, anchor: "end"}
	}
	return textStyle{x: px + offset, y: py - offset, anchor: "start"}
}

// hidesEnd reports whether the rectangle [x0, x1] × [y0, y1] covers the
// marker (3 units around) at the far end of any of lines.
func hidesEnd(lines []segment, x0, y0, x1, y1 float64) bool {
	const r = 3
	for _, l := range lines {
		if l.x2+r > x0 && l.x2-r < x1 && l.y2+r > y0 && l.y2-r < y1 {
			return true
		}
	}
	return false
}

func crossesAny(lines []segment, x0, y0, x1, y1 float64) bool {
	for _, l := range lines {
		if l.crosses(x0, y0, x1, y1) {
			return true
		}
	}
	return false
}

// crosses reports whether the segment passes through the rectangle
// [x0, x1] × [y0, y1] (Liang–Barsky clipping).
func (l segment) crosses(x0, y0, x1, y1 float64) bool {
	dx, dy := l.x2-l.x1, l.y2-l.y1
	t0, t1 := 0.0, 1.0
	for _, e := range [4][2]float64{
		{-dx, l.x1 - x0}, {dx, x1 - l.x1},
		{-dy, l.y1 - y0}, {dy, y1 - l.y1},
	} {
		p, q := e[0], e[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		r := q / p
		if p < 0 {
			t0 = max(t0, r)
		} else {
			t1 = min(t1, r)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}

func highlightColor(v float64, band *Band, higherIsBetter bool) string {
	switch {
	case band == nil:
		return colorHighlight
	case v < band.Low:
		if higherIsBetter {
			return colorWorse
		}
		return colorBetter
	case v > band.High:
		if higherIsBetter {
			return colorBetter
		}
		return colorWorse
	default:
		return colorHighlight
	}
}
