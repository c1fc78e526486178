package imagepin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/oci"
)

// Kind is what went wrong, in the words a person acts on.
type Kind string

// Kinds of resolution failure.
const (
	NotFound      Kind = "not found"         // no such tag, digest or repository
	Unauthorized  Kind = "unauthorized"      // HTTP 401: credentials missing or refused
	Denied        Kind = "denied"            // HTTP 403: credentials may not pull
	RateLimited   Kind = "rate limited"      // HTTP 429
	Timeout       Kind = "timeout"           // no answer within the per-attempt timeout
	Unreachable   Kind = "unreachable"       // DNS, connection refused, TLS
	RegistryError Kind = "registry error"    // HTTP 5xx or another status
	InvalidRef    Kind = "invalid reference" // not an image reference
	Canceled      Kind = "canceled"          // the caller's context ended
	Other         Kind = "error"             // anything else
)

// transient kinds are worth another attempt.
func (k Kind) transient() bool {
	switch k {
	case Timeout, Unreachable, RateLimited, RegistryError:
		return true
	}
	return false
}

// Error is why an image could not be resolved.
type Error struct {
	// Image is the reference as given.
	Image string
	// Registry is the registry host asked.
	Registry string
	Kind     Kind
	// Status is the HTTP status the registry answered, 0 without one.
	Status int
	// Detail is the registry's own answer (its error codes and messages)
	// or the transport's error.
	Detail string
	// Attempts is how many times the request was made.
	Attempts int
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "image %s: ", e.Image)
	switch e.Kind {
	case NotFound:
		fmt.Fprintf(&b, "not found in registry %s", e.Registry)
	case Unauthorized:
		fmt.Fprintf(&b, "unauthorized by registry %s (HTTP 401): no credentials or refused ones; give the CPU agent a docker login for it, or check the name (Docker Hub answers 401 for a repository that does not exist too)", e.Registry)
	case Denied:
		fmt.Fprintf(&b, "denied by registry %s (HTTP 403): the credentials may not pull it", e.Registry)
	case RateLimited:
		fmt.Fprintf(&b, "rate limited by registry %s (HTTP 429)", e.Registry)
	case Timeout:
		fmt.Fprintf(&b, "no answer from registry %s", e.Registry)
	case Unreachable:
		fmt.Fprintf(&b, "cannot reach registry %s", e.Registry)
	case RegistryError:
		fmt.Fprintf(&b, "registry %s failed", e.Registry)
		if e.Status != 0 {
			fmt.Fprintf(&b, " (HTTP %d)", e.Status)
		}
	case InvalidRef:
		b.WriteString("not an image reference")
	case Canceled:
		b.WriteString("resolution canceled")
	default:
		fmt.Fprintf(&b, "resolve through registry %s", e.Registry)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// classify turns what the registry client returned into an Error in plain
// words.
func classify(ref oci.Ref, err error, timedOut bool, timeout time.Duration) *Error {
	e := &Error{Image: ref.String(), Registry: ref.Registry, Kind: Other, Detail: err.Error(), Err: err}
	if timedOut {
		e.Kind = Timeout
		e.Detail = fmt.Sprintf("nothing within %s", timeout)
		return e
	}
	if re, ok := errAs[*oci.Error](err); ok {
		e.Status = re.StatusCode
		e.Detail = re.Error()
		switch {
		case re.Has("MANIFEST_UNKNOWN"), re.Has("NAME_UNKNOWN"), re.Has("BLOB_UNKNOWN"), re.StatusCode == http.StatusNotFound:
			e.Kind = NotFound
		case re.Has("UNAUTHORIZED"), re.StatusCode == http.StatusUnauthorized:
			e.Kind = Unauthorized
		case re.Has("DENIED"), re.StatusCode == http.StatusForbidden:
			e.Kind = Denied
		case re.Has("TOOMANYREQUESTS"), re.StatusCode == http.StatusTooManyRequests:
			e.Kind = RateLimited
		case re.StatusCode >= 500 || re.StatusCode == http.StatusRequestTimeout:
			e.Kind = RegistryError
		default:
			e.Kind = Other
		}
		return e
	}
	var ne net.Error
	var oe *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &oe):
		e.Kind = Unreachable
	case errors.As(err, &ne) && ne.Timeout():
		e.Kind = Timeout
	}
	return e
}
