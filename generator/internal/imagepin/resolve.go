package imagepin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/benchkite/benchkite/internal/oci"
)

// Defaults for a zero Resolver. A registry that answers nothing within the
// timeout gets Attempts tries in all, Backoff apart (doubling), so one image
// costs at most about Attempts*Timeout plus the pauses.
const (
	DefaultTimeout     = 20 * time.Second
	DefaultAttempts    = 3
	DefaultBackoff     = time.Second
	DefaultConcurrency = 4
)

// SkipNote is what a build's notes must say when images are not resolved.
const SkipNote = ":warning: Images not pinned: registry resolution is turned off, so steps name tags, not digests. " +
	"Jobs that start at different times may run different vLLM builds, a missing image is found only when a GPU job " +
	"tries to pull it, and summaries record a tag, not what ran."

// Resolver resolves image references to digests. The zero value is ready
// to use: Docker Hub anonymous tokens, credentials from the docker config
// and credential helpers (oci.DockerCredentials) where a registry asks.
type Resolver struct {
	// Credentials finds the login per registry host; nil means
	// oci.DockerCredentials.
	Credentials func(registry string) (oci.Credential, error)
	// Transport carries the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds one attempt (token, manifest and config requests).
	Timeout time.Duration
	// Attempts is how many times a transient failure (no answer, a
	// connection error, HTTP 429 or 5xx) is tried in all.
	Attempts int
	// Backoff is the pause after the first failed attempt; it doubles.
	Backoff time.Duration
	// Concurrency bounds the images resolved at once.
	Concurrency int
	// Skip resolves nothing: every reference comes back as given, and the
	// result carries SkipNote. For offline use (--no-resolve).
	Skip bool

	// resolveFunc replaces resolveOne in tests of the scheduling.
	resolveFunc func(context.Context, *oci.Client, oci.Ref) resolved
}

// Pin is what one image reference resolved to.
type Pin struct {
	// Ref is the reference as given.
	Ref string
	// Repo is Ref without tag and digest, spelled as given.
	Repo string
	// Tag is the tag, "latest" when Ref names none; empty for a
	// reference by digest alone.
	Tag string
	// Digest is the manifest (or multi-arch index) digest the registry
	// holds for Ref; empty when skipped or failed.
	Digest string
	// Pinned is repo:tag@sha256:..., what steps should run; equal to Ref
	// when skipped or failed.
	Pinned string
	// Commit is the vLLM commit when known, and CommitFrom says where it
	// was read: "tag", or the label or annotation that held it.
	Commit, CommitFrom string
	// Skipped: resolution was turned off.
	Skipped bool
	// Warning is a problem that did not stop the pin, such as an image
	// config that could not be read for its commit.
	Warning string
	// Err is why the image could not be resolved; it is an *Error.
	Err error
}

// Result holds one Pin per distinct reference, in first-seen order.
type Result struct {
	Pins []Pin
	// Note is set when resolution was skipped; builds must show it.
	Note  string
	byRef map[string]int
}

// Lookup returns the pin of a reference passed to Resolve.
func (r *Result) Lookup(ref string) (Pin, bool) {
	i, ok := r.byRef[ref]
	if !ok {
		return Pin{}, false
	}
	return r.Pins[i], true
}

// Resolve resolves every distinct reference once; references that name the
// same image (vllm/x:t and docker.io/vllm/x:t) share one resolution. It
// never fails as a whole: each Pin carries its own error, so the images
// that resolve can still run.
func (r *Resolver) Resolve(ctx context.Context, refs []string) *Result {
	res := &Result{byRef: map[string]int{}}
	if r.Skip {
		res.Note = SkipNote
	}
	// Distinct input spellings, grouped by the image they name.
	type group struct {
		ref  oci.Ref
		idxs []int
	}
	groups := map[string]*group{}
	var order []string
	for _, s := range refs {
		if _, seen := res.byRef[s]; seen {
			continue
		}
		p := splitRef(s)
		res.byRef[s] = len(res.Pins)
		res.Pins = append(res.Pins, p)
		if r.Skip {
			res.Pins[len(res.Pins)-1] = skipped(p)
			continue
		}
		ref, err := oci.ParseRef(s)
		if err != nil {
			res.Pins[len(res.Pins)-1].Err = &Error{Image: s, Kind: InvalidRef, Detail: err.Error(), Err: err}
			continue
		}
		key := ref.Name()
		g := groups[key]
		if g == nil {
			g = &group{ref: ref}
			groups[key] = g
			order = append(order, key)
		}
		g.idxs = append(g.idxs, res.byRef[s])
	}
	if len(order) == 0 {
		return res
	}
	// One client, so a registry's token serves every image of a repository.
	// Its budget is what resolving every distinct image may take: a
	// token, the tag's manifest and an index's image, with room for the
	// pings.
	client := &oci.Client{Transport: r.Transport, Credentials: r.Credentials, UserAgent: "benchkite-generator", MaxRequests: oci.DefaultMaxRequests + 4*len(order)}
	sem := make(chan struct{}, r.concurrency())
	var wg sync.WaitGroup
	for _, key := range order {
		g := groups[key]
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				for _, i := range g.idxs {
					res.Pins[i].Err = &Error{Image: res.Pins[i].Ref, Registry: g.ref.Registry, Kind: Canceled, Detail: ctx.Err().Error(), Err: ctx.Err()}
				}
				return
			}
			defer func() { <-sem }()
			one := r.resolveOne
			if r.resolveFunc != nil {
				one = r.resolveFunc
			}
			got := one(ctx, client, g.ref)
			for _, i := range g.idxs {
				res.Pins[i].take(got)
			}
		}()
	}
	wg.Wait()
	return res
}

// take is the image's resolution for this spelling of it. A commit the
// image's labels name wins over the one its tag names, with a warning
// when they differ.
func (p *Pin) take(got resolved) {
	if got.err != nil {
		e := *got.err
		e.Image = p.Ref
		p.Err = &e
		return
	}
	p.Digest = got.digest
	p.Pinned = pinnedForm(*p, got.digest)
	p.Warning = got.warning
	if got.commit != "" {
		if p.Commit != "" && !sameCommit(p.Commit, got.commit) {
			p.Warning = joinWarnings(p.Warning, fmt.Sprintf("tag says vLLM commit %s but the image's %s says %s; using the image's", p.Commit, got.commitFrom, got.commit))
		}
		p.Commit, p.CommitFrom = got.commit, got.commitFrom
	}
}

func (r *Resolver) timeout() time.Duration { return positiveOr(r.Timeout, DefaultTimeout) }
func (r *Resolver) attempts() int          { return positiveOr(r.Attempts, DefaultAttempts) }
func (r *Resolver) backoff() time.Duration { return positiveOr(r.Backoff, DefaultBackoff) }
func (r *Resolver) concurrency() int       { return positiveOr(r.Concurrency, DefaultConcurrency) }

// positiveOr is v, or def when v is not above zero: a Resolver's zero
// (or negative) setting means its default.
func positiveOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// resolved is what one image resolved to, before it is copied to every
// spelling of the image.
type resolved struct {
	digest             string
	commit, commitFrom string
	warning            string
	err                *Error
}

func (r *Resolver) resolveOne(ctx context.Context, client *oci.Client, ref oci.Ref) resolved {
	var desc *oci.Manifest
	if e := r.retry(ctx, ref, func(ctx context.Context) error {
		var err error
		desc, err = client.Manifest(ctx, ref)
		return err
	}); e != nil {
		return resolved{err: e}
	}
	out := resolved{digest: desc.Digest}
	commit, from, err := r.commitOf(ctx, client, ref, desc)
	switch {
	case err != nil:
		out.warning = "could not read the image config for its vLLM commit: " + err.Error()
	case commit != "":
		out.commit, out.commitFrom = commit, from
	}
	return out
}

// retry runs f with a fresh per-attempt timeout until it succeeds, fails
// for good, the attempts run out or ctx ends.
func (r *Resolver) retry(ctx context.Context, ref oci.Ref, f func(context.Context) error) *Error {
	n := r.attempts()
	pause := r.backoff()
	for i := 1; ; i++ {
		actx, cancel := context.WithTimeout(ctx, r.timeout())
		err := f(actx)
		timedOut := err != nil && actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		e := classify(ref, err, timedOut, r.timeout())
		e.Attempts = i
		if ctx.Err() != nil {
			e.Kind, e.Detail = Canceled, ctx.Err().Error()
			return e
		}
		if i >= n || !e.Kind.transient() {
			return e
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			e.Kind, e.Detail = Canceled, ctx.Err().Error()
			return e
		}
		pause *= 2
	}
}

// Labels and annotations that carry the vLLM commit, most specific first.
// vLLM's docker-bake.hcl sets both labels on the image config and the
// revision annotation on the manifest and index; unset, they read
// "unknown".
var commitKeys = []string{"ai.vllm.build.commit", "org.opencontainers.image.revision"}

// commitOf reads the vLLM commit from the manifest's annotations and the
// image config's labels. For a multi-arch index it reads the linux/amd64
// image, or the first image when there is none: the commit is the same
// build for every platform.
func (r *Resolver) commitOf(ctx context.Context, client *oci.Client, ref oci.Ref, desc *oci.Manifest) (commit, from string, err error) {
	var annotations map[string]string
	var indexAnnotations map[string]string
	if oci.IsIndex(desc.MediaType) {
		idx, err := desc.ParseIndex()
		if err != nil {
			return "", "", err
		}
		indexAnnotations = idx.Annotations
		child, ok := oci.PickImage(idx.Manifests)
		if !ok {
			return fromMaps(nil, indexAnnotations, "index annotation ")
		}
		childRef := ref.At(child.Digest)
		var cdesc *oci.Manifest
		if e := r.retry(ctx, childRef, func(ctx context.Context) error {
			var err error
			cdesc, err = client.Manifest(ctx, childRef)
			return err
		}); e != nil {
			return "", "", e
		}
		desc = cdesc
	}
	var labels map[string]string
	if oci.IsImage(desc.MediaType) {
		m, err := desc.ParseImage()
		if err != nil {
			return "", "", err
		}
		annotations = m.Annotations
		cfgRef := ref.At(m.Config.Digest)
		var cf *oci.ConfigFile
		if e := r.retry(ctx, cfgRef, func(ctx context.Context) error {
			b, err := client.Blob(ctx, cfgRef, oci.MaxConfigBytes)
			if err != nil {
				return err
			}
			cf, err = oci.ParseConfig(b)
			if err != nil {
				return fmt.Errorf("parse image config %s: %w", cfgRef.Digest, err)
			}
			return nil
		}); e != nil {
			return "", "", e
		}
		labels = cf.Config.Labels
	}
	if c, f, _ := fromMaps(labels, nil, "label "); c != "" {
		return c, f, nil
	}
	if c, f, _ := fromMaps(annotations, nil, "manifest annotation "); c != "" {
		return c, f, nil
	}
	return fromMaps(indexAnnotations, nil, "index annotation ")
}

func fromMaps(m, alt map[string]string, prefix string) (string, string, error) {
	for _, src := range []map[string]string{m, alt} {
		for _, k := range commitKeys {
			if c := commitValue(src[k]); c != "" {
				return c, prefix + k, nil
			}
		}
	}
	return "", "", nil
}

// splitRef fills the parts of a Pin that come from the reference alone.
func splitRef(s string) Pin {
	p := Pin{Ref: s, Pinned: ""}
	rest := s
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[:at]
	}
	if colon := strings.LastIndex(rest, ":"); colon > strings.LastIndex(rest, "/") {
		p.Tag = rest[colon+1:]
		rest = rest[:colon]
	} else if !strings.Contains(s, "@") {
		p.Tag = "latest"
	}
	p.Repo = rest
	if c := CommitFromTag(p.Tag); c != "" {
		p.Commit, p.CommitFrom = c, "tag"
	}
	return p
}

func skipped(p Pin) Pin {
	p.Skipped = true
	p.Pinned = p.Ref
	return p
}

func pinnedForm(p Pin, digest string) string {
	if p.Tag == "" {
		return p.Repo + "@" + digest
	}
	return p.Repo + ":" + p.Tag + "@" + digest
}

func joinWarnings(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// errAs is errors.As for a target type, kept small for classify.
func errAs[T error](err error) (T, bool) {
	var t T
	ok := errors.As(err, &t)
	return t, ok
}
