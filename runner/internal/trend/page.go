package trend

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"regexp"
)

// Page is the report step's picture of the nights: one section per
// recipe, one chart per metric. It is one self-contained HTML file (inline
// SVG, CSS and a few lines of script), so it opens from the artifact with
// no network.
type Page struct {
	Title    string
	Subtitle string
	// Overview, when set, is the build-wide section above the recipes:
	// what each night cost.
	Overview *Section
	Sections []Section
}

// Section is one recipe's charts.
type Section struct {
	// ID is the recipe name, the section's anchor: annotations link to
	// trends.html#<recipe>.
	ID       string
	Title    string
	Subtitle string
	// Verdict is tonight's verdict, shown as a badge.
	Verdict string
	// Note is said under the title: why there are no charts, say.
	Note   string
	Panels []Panel
}

// idRE is what an anchor may hold; anything else becomes "-".
var idRE = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// WritePage writes p as HTML.
func WritePage(w io.Writer, p Page) error {
	var b bytes.Buffer
	esc := func(s string) string { return html.EscapeString(cleanText(s)) }
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>%s</style>
</head>
<body>
<header><h1>%s</h1><p>%s</p>
<p class="legend"><span class="k band"></span> allowed range (baseline and noise) <span class="k limit"></span> limit <span class="k change"></span> change point <span class="k series"></span> recipe changed or regression accepted %s<span class="k tonight"></span> tonight · hover a point for its night</p>
</header>
`, esc(p.Title), pageCSS, esc(p.Title), esc(p.Subtitle), failedLegend(p))
	if len(p.Sections) == 0 {
		b.WriteString("<p class=\"empty\">No recipe has results in this build.</p>\n")
	}
	if len(p.Sections) > 1 {
		b.WriteString("<nav>")
		for _, s := range p.Sections {
			fmt.Fprintf(&b, `<a href="#%s" class="v-%s">%s</a> `, idRE.ReplaceAllString(s.ID, "-"), idRE.ReplaceAllString(s.Verdict, "-"), esc(s.Title))
		}
		b.WriteString("</nav>\n")
	}
	if o := p.Overview; o != nil {
		fmt.Fprintf(&b, "<section id=\"%s\" class=\"overview\" data-charts=\"%d\">\n<h2>%s</h2>\n<p class=\"sub\">%s</p>\n<div class=\"grid\">\n",
			idRE.ReplaceAllString(o.ID, "-"), len(o.Panels), esc(o.Title), esc(o.Subtitle))
		if err := writePanels(&b, *o, esc); err != nil {
			return err
		}
	}
	for _, s := range p.Sections {
		id := idRE.ReplaceAllString(s.ID, "-")
		fmt.Fprintf(&b, "<section id=\"%s\" class=\"recipe\" data-recipe=\"%s\" data-charts=\"%d\">\n<h2>%s <span class=\"badge v-%s\">%s</span></h2>\n<p class=\"sub\">%s</p>\n<div class=\"grid\">\n",
			id, esc(s.ID), len(s.Panels), esc(s.Title), idRE.ReplaceAllString(s.Verdict, "-"), esc(s.Verdict), esc(s.Subtitle))
		if err := writePanels(&b, s, esc); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "<script>%s</script>\n</body>\n</html>\n", pageJS)
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write trend page: %w", err)
	}
	return nil
}

// failedLegend is the legend's entry for a failed night, there only when a
// chart of the page draws one.
func failedLegend(p Page) string {
	sections := p.Sections
	if p.Overview != nil {
		sections = append([]Section{*p.Overview}, sections...)
	}
	for _, s := range sections {
		for _, panel := range s.Panels {
			if hasFailed(panel) {
				return `<span class="k failed"></span> failed night (the job failed) `
			}
		}
	}
	return ""
}

// writePanels writes a section's note and charts, and closes it.
func writePanels(b *bytes.Buffer, s Section, esc func(string) string) error {
	if s.Note != "" {
		fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", esc(s.Note))
	}
	for _, panel := range s.Panels {
		b.WriteString(`<figure class="chart">`)
		if err := Render(b, "", []Panel{panel}); err != nil {
			return err
		}
		b.WriteString("</figure>\n")
	}
	b.WriteString("</div>\n</section>\n")
	return nil
}

const pageCSS = `
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1340px;padding:16px 24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 2px}
.sub,header p{color:#555;margin:2px 0}.note{margin:6px 0;padding:6px 10px;background:#fff;border-left:4px solid #c678dd}
nav{margin:12px 0;line-height:2}nav a{margin-right:10px;text-decoration:none;padding:2px 8px;border-radius:10px;background:#eee;color:#222}
.badge{font-size:12px;padding:2px 8px;border-radius:10px;vertical-align:middle;background:#eee}
.v-pass{background:#d9f2dd}.v-fail,.v-regressed{background:#fbd9d9}.v-error{background:#f4d0f0}.v-unverified{background:#fdf0c6}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:12px}
figure.chart{margin:0;background:#fff;border:1px solid #ddd;border-radius:6px;padding:4px}
figure.chart svg{width:100%;height:auto;display:block}
circle.night{cursor:pointer}circle.night:hover{r:6}
.legend .k{display:inline-block;width:18px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
.k.band{background:rgba(44,160,44,.2)}.k.limit{border-top:2px dashed #d62728;height:0}
.k.change{border-left:2px dashed #d62728;width:0}.k.series{border-left:2px dashed #666;width:0}
.k.tonight{background:#ff7f0e;border-radius:50%;width:10px}
.k.failed{background:#fff;border:2px solid #d62728;border-radius:50%;width:6px;height:6px}
`

// pageJS marks each section with how many of its charts drew a night,
// for people (a missing chart shows) and for the browser test.
const pageJS = `
document.querySelectorAll("section.recipe, section.overview").forEach(function (s) {
  var drawn = 0;
  s.querySelectorAll("figure.chart").forEach(function (f) {
    if (f.querySelector("circle.night")) { drawn++; } else { f.classList.add("nodata"); }
  });
  s.dataset.drawn = String(drawn);
});
document.body.dataset.ready = "1";
`
