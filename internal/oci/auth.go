package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

func (c *Client) remember(key, auth string) {
	if auth == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.auth == nil {
		c.auth = map[string]string{}
	}
	c.auth[key] = auth
}

// ping asks the registry's /v2/ how it authenticates: the challenges of a
// 401, none for a 200. Any other answer is the registry's error.
func (c *Client) ping(ctx context.Context, ref Ref) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.scheme()+"://"+ref.Registry+"/v2/", nil)
	if err != nil {
		return nil, err
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var challenges []string
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		challenges = resp.Header.Values("WWW-Authenticate")
	case resp.StatusCode/100 != 2:
		return nil, errorOf(ref.Registry, resp)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBytes))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.challenges == nil {
		c.challenges = map[string][]string{}
	}
	c.challenges[ref.Registry] = challenges
	return challenges, nil
}

func (c *Client) credentials(registry string) (Credential, error) {
	if c.Credentials != nil {
		return c.Credentials(registry)
	}
	return DockerCredentials(registry)
}

// authorize answers a 401's challenges: the Authorization header to try
// again with, or "" when there is nothing better to try (basic auth with
// no credentials).
func (c *Client) authorize(ctx context.Context, ref Ref, challenges []string) (string, error) {
	for _, ch := range challenges {
		scheme, params := parseChallenge(ch)
		switch strings.ToLower(scheme) {
		case "bearer":
			cred, err := c.credentials(ref.Registry)
			if err != nil {
				return "", err
			}
			tok, err := c.token(ctx, ref, params, cred)
			if err != nil {
				return "", err
			}
			return "Bearer " + tok, nil
		case "basic":
			cred, err := c.credentials(ref.Registry)
			if err != nil {
				return "", err
			}
			if cred.Username == "" && cred.Password == "" {
				return "", nil
			}
			req, _ := http.NewRequest(http.MethodGet, "/", nil)
			req.SetBasicAuth(cred.Username, cred.Password)
			return req.Header.Get("Authorization"), nil
		}
	}
	return "", nil
}

// token asks the challenge's token server for a pull token of ref's
// repository, anonymously or with cred: a password by basic auth, an
// identity token as an OAuth2 refresh token.
func (c *Client) token(ctx context.Context, ref Ref, params map[string]string, cred Credential) (string, error) {
	realm := params["realm"]
	u, err := url.Parse(realm)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("registry %s: token realm %q is not a URL", ref.Registry, realm)
	}
	scope := "repository:" + ref.Repository + ":pull"
	var req *http.Request
	if cred.IdentityToken != "" {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {cred.IdentityToken}, "scope": {scope}, "client_id": {"benchkite"}}
		if s := params["service"]; s != "" {
			form.Set("service", s)
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		q := u.Query()
		if s := params["service"]; s != "" {
			q.Set("service", s)
		}
		q.Set("scope", scope)
		u.RawQuery = q.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", err
		}
		if cred.Username != "" || cred.Password != "" {
			req.SetBasicAuth(cred.Username, cred.Password)
		}
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e := errorOf(u.Host, resp)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			// The registry's own words: the token server refused us.
			e.Registry = ref.Registry
		}
		return "", e
	}
	var doc struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenBytes)).Decode(&doc); err != nil {
		return "", fmt.Errorf("registry %s: token from %s: %w", ref.Registry, u.Host, err)
	}
	if doc.Token == "" {
		doc.Token = doc.AccessToken
	}
	if doc.Token == "" {
		return "", errors.New("registry " + ref.Registry + ": the token server sent no token")
	}
	return doc.Token, nil
}

// parseChallenge reads `Bearer realm="...",service="..."`.
func parseChallenge(h string) (string, map[string]string) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, `"`) {
			end := 1
			var b strings.Builder
			for end < len(v) && v[end] != '"' {
				if v[end] == '\\' && end+1 < len(v) {
					end++
				}
				b.WriteByte(v[end])
				end++
			}
			params[k] = b.String()
			rest = strings.TrimPrefix(strings.TrimSpace(v[min(end+1, len(v)):]), ",")
		} else {
			val, after, _ := strings.Cut(v, ",")
			params[k] = strings.TrimSpace(val)
			rest = after
		}
		rest = strings.TrimSpace(rest)
	}
	return scheme, params
}
