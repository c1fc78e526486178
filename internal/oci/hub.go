package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// TagPush is a tag and when it was last pushed.
type TagPush struct {
	Name   string
	Pushed time.Time
}

// hubPageSize is how many tags one page of Docker Hub's tag list holds
// (its most).
const hubPageSize = 100

// HubTags lists the tags of a Docker Hub repository with when each was
// last pushed, newest first, page by page, as Docker Hub's web API gives
// them (GET /v2/namespaces/<ns>/repositories/<name>/tags, ordered by
// last_updated); the registry API cannot say when a tag was pushed, and
// reading each image's config for its creation time costs a pull each.
// enough is told each page's tags and stops the listing when it says so;
// at most MaxTagPages pages are read.
func (c *Client) HubTags(ctx context.Context, repo Ref, enough func(page []TagPush) bool) ([]TagPush, error) {
	ns, name, ok := strings.Cut(repo.Repository, "/")
	if !ok || strings.Contains(name, "/") {
		return nil, fmt.Errorf("tags of %s: not a Docker Hub namespace/name", repo.Repository)
	}
	base := c.HubAPI
	if base == "" {
		base = DefaultHubAPI
	}
	first, err := url.Parse(base + "/v2/namespaces/" + url.PathEscape(ns) + "/repositories/" + url.PathEscape(name) + "/tags")
	if err != nil {
		return nil, fmt.Errorf("tags of %s: %w", repo.Repository, err)
	}
	first.RawQuery = url.Values{"page_size": {fmt.Sprint(hubPageSize)}, "ordering": {"last_updated"}}.Encode()
	var all []TagPush
	seen := map[string]bool{}
	for next, pages := first.String(), 0; next != ""; pages++ {
		if seen[next] {
			return nil, fmt.Errorf("tags of %s: Docker Hub's next page points back to a page already read", repo.Repository)
		}
		if pages == MaxTagPages {
			return nil, fmt.Errorf("tags of %s: more than %d pages of tags; not read further", repo.Repository, MaxTagPages)
		}
		seen[next] = true
		page, more, err := c.hubPage(ctx, first, next)
		if err != nil {
			return nil, fmt.Errorf("tags of %s: %w", repo.Repository, err)
		}
		all = append(all, page...)
		if enough(page) {
			break
		}
		next = more
	}
	return all, nil
}

// hubPage reads one page of Docker Hub's tag list and the next page's
// address, which must stay on the list.
func (c *Client) hubPage(ctx context.Context, first *url.URL, target string) ([]TagPush, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, "", errorOf(first.Host, resp)
	}
	var doc struct {
		Next    *string `json:"next"`
		Results []struct {
			Name          string    `json:"name"`
			TagLastPushed time.Time `json:"tag_last_pushed"`
			LastUpdated   time.Time `json:"last_updated"`
		} `json:"results"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTagsBytes)).Decode(&doc); err != nil {
		return nil, "", fmt.Errorf("Docker Hub's tag list: %w", err)
	}
	var out []TagPush
	for _, r := range doc.Results {
		pushed := r.TagLastPushed
		if pushed.IsZero() {
			pushed = r.LastUpdated
		}
		out = append(out, TagPush{Name: r.Name, Pushed: pushed.UTC()})
	}
	if doc.Next == nil || *doc.Next == "" {
		return out, "", nil
	}
	u, err := first.Parse(*doc.Next)
	if err != nil || u.Host != first.Host || u.Path != first.Path {
		return nil, "", fmt.Errorf("Docker Hub's next page %q leaves the tag list", *doc.Next)
	}
	return out, u.String(), nil
}
