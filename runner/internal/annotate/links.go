package annotate

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// writeLinks are the places to click: the job's log, its artifacts, the
// trend page, the previous nights, and the vLLM commits between the last
// good and the first bad night.
func writeLinks(b *strings.Builder, s summary.Summary) {
	var links []string
	bk := s.Buildkite
	buildURL := ""
	if bk != nil && safeURL(bk.BuildURL) {
		buildURL = bk.BuildURL
	}
	if buildURL != "" && bk != nil && jobID(bk.JobID) {
		links = append(links, fmt.Sprintf("[job log](%s#%s)", buildURL, bk.JobID))
	}
	if safeName(s.Recipe) {
		links = append(links, fmt.Sprintf(`<a href="artifact://results/%s/summary.json">summary.json</a>`, s.Recipe))
		links = append(links, fmt.Sprintf(`<a href="artifact://%s#%s">trend page</a>`, TrendPage, s.Recipe))
	}
	if nights := nightsURL(buildURL, bk); nights != "" {
		links = append(links, fmt.Sprintf("[previous nights](%s)", nights))
	}
	for _, g := range s.Gates {
		cp := g.ChangePoint
		if cp == nil || g.Verdict != summary.VerdictFail {
			continue
		}
		good, bad := cp.LastGood.VLLMCommit, cp.FirstBad.VLLMCommit
		if hexCommit(good) && hexCommit(bad) && good != bad {
			links = append(links, fmt.Sprintf("[vLLM %s…%s](https://github.com/vllm-project/vllm/compare/%s...%s) (last good…first bad)", short(good), short(bad), good, bad))
			break
		}
	}
	if len(links) == 0 {
		return
	}
	b.WriteString(strings.Join(links, " · ") + "\n\n")
}

// TrendPage is the report step's page of every recipe's nights, an
// artifact of that step; a recipe's section is its name as the fragment.
const TrendPage = "results/_report/trends.html"

func short(c string) string {
	if len(c) > 9 {
		return c[:9]
	}
	return c
}

func hexCommit(c string) bool {
	if len(c) < 7 || len(c) > 40 {
		return false
	}
	for _, r := range c {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// nightsURL is the pipeline's builds page filtered to the branch whose
// scheduled builds are the nights a run is judged against, the same on a
// nightly as on a pull request's build (whose own branch holds none of
// them); all branches when that branch is unknown. "" without a build URL.
func nightsURL(buildURL string, bk *summary.BuildkiteInfo) string {
	pipeline := pipelineURL(buildURL)
	if pipeline == "" {
		return ""
	}
	if bk == nil || bk.BaselineBranch == "" {
		return pipeline + "/builds"
	}
	return pipeline + "/builds?branch=" + url.QueryEscape(bk.BaselineBranch)
}

// pipelineURL is a build URL without "/builds/N", or "".
func pipelineURL(buildURL string) string {
	i := strings.LastIndex(buildURL, "/builds/")
	if i <= 0 {
		return ""
	}
	return buildURL[:i]
}
