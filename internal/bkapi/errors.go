package bkapi

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Sentinel errors for errors.Is.
var (
	// ErrNoToken means no API token was found or configured.
	ErrNoToken = errors.New("no Buildkite API token")
	// ErrUnauthorized is a 401 or 403 from the API: the token is wrong or
	// lacks a scope.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNotFound is a 404 from the API (wrong organization, pipeline,
	// build or artifact, or one the token cannot see), or a refused or
	// missing object at the artifact storage.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable means the API did not answer usefully after all
	// retries: 5xx, 429, timeouts or network errors.
	ErrUnavailable = errors.New("buildkite API unavailable")
	// ErrArtifactTooLarge means an artifact exceeds MaxArtifactSize.
	ErrArtifactTooLarge = errors.New("artifact too large")
)

const (
	hintUnauthorized = "check the API token is valid and has the read_builds and read_artifacts scopes (write_builds to create builds)"
	hintNotFound     = "check the organization and pipeline slugs, and that the API token has access to the pipeline"
	hintStorage      = "the artifact storage refused the download; the artifact may have expired"
)

// StatusError is an HTTP response with a status other than 2xx.
type StatusError struct {
	Method     string
	URL        string // without query string: storage URLs carry signatures
	StatusCode int
	Message    string        // the "message" of a JSON error body, if any
	RetryAfter time.Duration // from a 429's Retry-After header, if any
	// FromStorage is set when the response came from the artifact storage
	// a download was redirected to, not from the API.
	FromStorage bool
}

func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: status %d", e.Method, e.URL, e.StatusCode)
	if e.Message != "" {
		fmt.Fprintf(&b, " (%s)", e.Message)
	}
	if h := e.hint(); h != "" {
		b.WriteString(": " + h)
	}
	return b.String()
}

func (e *StatusError) hint() string {
	switch {
	case e.FromStorage && (e.StatusCode == 403 || e.StatusCode == 404):
		return hintStorage
	case e.StatusCode == 401 || e.StatusCode == 403:
		return hintUnauthorized
	case e.StatusCode == 404:
		return hintNotFound
	}
	return ""
}

// Is classifies the status for errors.Is.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return !e.FromStorage && (e.StatusCode == 401 || e.StatusCode == 403)
	case ErrNotFound:
		// Storage answers 403 for a missing object it may not list.
		return e.StatusCode == 404 || (e.FromStorage && e.StatusCode == 403)
	case ErrUnavailable:
		return e.StatusCode == 429 || e.StatusCode >= 500
	}
	return false
}

// redactedError hides the token in the message of an error chain while
// keeping the chain itself for errors.Is and errors.As.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string { return redact(e.err.Error(), e.secret) }
func (e *redactedError) Unwrap() error { return e.err }

func redactErr(err error, secret string) error {
	if err == nil || secret == "" {
		return err
	}
	return &redactedError{err: err, secret: secret}
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[REDACTED]")
}

// stripQuery drops the query string, where presigned storage URLs keep
// their signatures, and any user info.
func stripQuery(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.RawQuery = ""
	c.ForceQuery = false
	c.Fragment = ""
	c.User = nil
	return c.String()
}
