package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// Tags lists the tags of repo, following the registry's pages.
func (c *Client) Tags(ctx context.Context, repo Ref) ([]string, error) {
	var all []string
	next := "/tags/list"
	seen := map[string]bool{}
	for pages := 0; next != ""; pages++ {
		if seen[next] {
			return nil, fmt.Errorf("tags of %s: the Link header points back to a page already read (%s)", repo, next)
		}
		if pages == MaxTagPages {
			return nil, fmt.Errorf("tags of %s: more than %d pages of tags; not read further", repo, MaxTagPages)
		}
		seen[next] = true
		resp, err := c.get(ctx, repo, next, "application/json")
		if err != nil {
			return nil, err
		}
		var page struct {
			Tags []string `json:"tags"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, maxTagsBytes)).Decode(&page)
		link := resp.Header.Get("Link")
		base := resp.Request.URL
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("tags of %s: %w", repo, err)
		}
		all = append(all, page.Tags...)
		next, err = nextPage(base, link, repo)
		if err != nil {
			return nil, err
		}
	}
	return all, nil
}

// nextPage is the path and query after /v2/<repository> of the Link
// header's next page, or "" on the last page.
func nextPage(base *url.URL, link string, repo Ref) (string, error) {
	if link == "" {
		return "", nil
	}
	target, _, _ := strings.Cut(link, ";")
	target = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(target), "<"), ">")
	u, err := base.Parse(target)
	if err != nil {
		return "", fmt.Errorf("tags of %s: Link header %q: %w", repo, link, err)
	}
	prefix := "/v2/" + repo.Repository
	if u.Host != base.Host || !strings.HasPrefix(u.Path, prefix+"/") {
		return "", fmt.Errorf("tags of %s: Link header %q leaves the repository", repo, link)
	}
	next := strings.TrimPrefix(u.Path, prefix)
	if u.RawQuery != "" {
		next += "?" + u.RawQuery
	}
	return next, nil
}
