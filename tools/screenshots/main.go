// Command screenshots renders the golden annotations, the golden build
// report and the golden trend page the way a person sees them, and saves
// PNGs under -out (results/screenshots; docs/screenshots for the README): Markdown as CommonMark with
// GFM tables and raw HTML (as Buildkite renders annotations), pages in
// headless Chromium. Run it with `make screenshots`.
//
// It is its own module so that the Markdown renderer stays out of the
// product's dependencies.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	goldmarkhtml "github.com/yuin/goldmark/renderer/html"
)

// shot is one picture: a golden Markdown file shown as an annotation of
// a style, or a golden HTML page shown as it is.
type shot struct {
	name, source, style, caption string
	width                        int
	// then is a second annotation of the same build, shown below the
	// first as Buildkite stacks them, in thenStyle.
	then, thenStyle string
	// inDrill: source and then are in -drill, what `make drill` wrote.
	inDrill bool
}

var shots = []shot{
	{name: "annotation-pass", source: "runner/internal/job/testdata/annotations/pass.md", style: "success", caption: "a passing night", width: 1100},
	{name: "annotation-fail", source: "runner/internal/job/testdata/annotations/perf_regression.md", style: "error", caption: "a throughput and TPOT regression", width: 1100},
	{name: "annotation-oom", source: "runner/internal/job/testdata/annotations/oom.md", style: "error", caption: "vLLM out of memory while loading", width: 1100},
	{name: "annotation-unverified", source: "runner/internal/job/testdata/annotations/no_baseline.md", style: "warning", caption: "no baseline: unverified, soft-failed", width: 1100},
	{name: "report", source: "runner/internal/report/testdata/report/report.md", style: "error", caption: "the build report", width: 1500},
	{name: "trends", source: "runner/internal/report/testdata/report/trends.html", caption: "the trend page", width: 1340},
	{name: "drill", source: "report.md", style: "error", caption: "the drill's red night and its bisection", width: 1500,
		then: "bisect.md", thenStyle: "warning", inDrill: true},
}

func main() {
	root := flag.String("root", ".", "the repository's root")
	out := flag.String("out", "results/screenshots", "where the PNGs go, under root (docs/screenshots: the README's)")
	drill := flag.String("drill", "docs/drill", "where `make drill` left report.md and bisect.md, under root")
	browser := flag.String("chromium", os.Getenv("BENCHKITE_CHROMIUM"), "the Chromium binary (env BENCHKITE_CHROMIUM; default: chromium on PATH)")
	flag.Parse()
	if *browser == "" {
		p, err := exec.LookPath("chromium")
		if err != nil {
			fail(errors.New("no chromium on PATH (apt package chromium), and no --chromium"))
		}
		*browser = p
	}
	tmp, err := os.MkdirTemp("", "screenshots")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(filepath.Join(*root, *out), 0o755); err != nil {
		fail(err)
	}
	for _, s := range shots {
		dir := *root
		if s.inDrill {
			dir = filepath.Join(*root, *drill)
		}
		page := filepath.Join(dir, s.source)
		if s.style != "" {
			md, err := os.ReadFile(page)
			if err != nil {
				fail(err)
			}
			cards := []card{{md, s.style}}
			if s.then != "" {
				more, err := os.ReadFile(filepath.Join(dir, s.then))
				if err != nil {
					fail(err)
				}
				cards = append(cards, card{more, s.thenStyle})
			}
			page = filepath.Join(tmp, s.name+".html")
			if err := os.WriteFile(page, annotationPage(s.caption, cards...), 0o644); err != nil {
				fail(err)
			}
		}
		abs, err := filepath.Abs(page)
		if err != nil {
			fail(err)
		}
		png := filepath.Join(*root, *out, s.name+".png")
		if err := capture(*browser, tmp, "file://"+abs, png, s.width); err != nil {
			fail(fmt.Errorf("%s: %w", s.name, err))
		}
		fmt.Println(png)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "screenshots:", err)
	os.Exit(1)
}

// card is one annotation: its Markdown and its style.
type card struct {
	md    []byte
	style string
}

// annotationPage is each card's Markdown rendered as Buildkite renders an
// annotation body (CommonMark, GFM tables and strikethrough, raw HTML
// kept), in a card of its style, one below the other.
func annotationPage(caption string, cards ...card) []byte {
	conv := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify),
		goldmark.WithRendererOptions(goldmarkhtml.WithUnsafe()))
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!DOCTYPE html><html><head><meta charset="utf-8"><title>%s</title><style>%s</style></head><body>
`, html.EscapeString(caption), css)
	for _, c := range cards {
		var body bytes.Buffer
		if err := conv.Convert(c.md, &body); err != nil {
			fail(err)
		}
		fmt.Fprintf(&b, "<div class=\"annotation %s\">%s</div>\n", c.style, body.String())
	}
	b.WriteString("</body></html>")
	return b.Bytes()
}

// css is close to Buildkite's annotation look: a card with a coloured
// edge, compact tables, grey code.
const css = `
body{margin:0;padding:16px;background:#f5f5f5;font:14px/1.5 -apple-system,"Segoe UI","DejaVu Sans",Helvetica,Arial,sans-serif;color:#111}
.annotation{background:#fff;border:1px solid #ddd;border-left:6px solid #888;border-radius:4px;padding:12px 18px;overflow-x:auto;margin-bottom:12px}
.success{border-left-color:#2ecc40}.error{border-left-color:#e5413a}.warning{border-left-color:#f5a623}.info{border-left-color:#3b82f6}
h3{font-size:17px;margin:4px 0 10px}h4{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #e1e1e1;padding:4px 8px;vertical-align:top}
th{background:#fafafa;text-align:left}code{background:#f1f1f1;border-radius:3px;padding:1px 4px;font-size:12.5px;font-family:"DejaVu Sans Mono",Menlo,monospace}
a{color:#1d6ac8;text-decoration:none}details{margin-top:8px}summary{cursor:pointer;color:#555}
ul{padding-left:22px;margin:6px 0}p{margin:6px 0}
`

// capture saves url as a PNG width pixels wide, cut below the content.
func capture(browser, tmp, url, out string, width int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	raw := filepath.Join(tmp, "shot.png")
	args := []string{"--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + filepath.Join(tmp, "profile"), "--force-device-scale-factor=1", "--virtual-time-budget=3000",
		fmt.Sprintf("--window-size=%d,6000", width), "--screenshot=" + raw, url}
	// Chromium refuses to start as root with its sandbox on (a root
	// container, a CI machine); any other user keeps the sandbox.
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...)
	}
	cmd := exec.CommandContext(ctx, browser, args...)
	cmd.Env = append(os.Environ(), "HOME="+tmp)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", browser, err, msg)
	}
	return trim(raw, out)
}

// trim cuts the picture below its last row that is not background.
func trim(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return err
	}
	bg := img.At(img.Bounds().Max.X-1, img.Bounds().Max.Y-1)
	last := img.Bounds().Min.Y
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 2 {
			if !same(img.At(x, y), bg) {
				last = y
				break
			}
		}
	}
	cut := image.Rect(img.Bounds().Min.X, img.Bounds().Min.Y, img.Bounds().Max.X, min(last+16, img.Bounds().Max.Y))
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return errors.New("screenshot cannot be cut")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := png.Encode(w, sub.SubImage(cut)); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func same(a, b color.Color) bool {
	r1, g1, b1, _ := a.RGBA()
	r2, g2, b2, _ := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2
}
