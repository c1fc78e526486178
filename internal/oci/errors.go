package oci

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Error is a registry's (or its token server's) answer other than success.
type Error struct {
	// Registry is the host that answered.
	Registry   string
	StatusCode int
	// Errors are the distribution spec's error entries of the body.
	Errors []Diagnostic
}

// Diagnostic is one entry of a registry's error body.
type Diagnostic struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error words it as the registry did: its codes, lower case, and messages,
// then the HTTP status.
func (e *Error) Error() string {
	var parts []string
	for _, d := range e.Errors {
		code := strings.ToLower(strings.ReplaceAll(d.Code, "_", " "))
		msg := strings.TrimSpace(d.Message)
		switch {
		case msg == "" || strings.EqualFold(msg, code):
			parts = append(parts, code)
		default:
			parts = append(parts, code+" ("+msg+")")
		}
	}
	status := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if len(parts) == 0 {
		return "registry answered " + status
	}
	return "registry answered " + strings.Join(parts, "; ") + ", " + status
}

// Has reports whether the registry answered with the error code.
func (e *Error) Has(code string) bool {
	for _, d := range e.Errors {
		if d.Code == code {
			return true
		}
	}
	return false
}

func errorOf(host string, resp *http.Response) *Error {
	e := &Error{Registry: host, StatusCode: resp.StatusCode}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	var doc struct {
		Errors []Diagnostic `json:"errors"`
	}
	if json.Unmarshal(body, &doc) == nil {
		e.Errors = doc.Errors
	}
	return e
}
