// Package recipeimage decides the image each selected recipe's step
// runs: the registry's digest, asked once per distinct image before any
// GPU step exists, and what the build's notes say about the images.
package recipeimage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/imagepin"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/workloads"
)

// Resolve resolves the image every selected recipe pulls, once per
// distinct image, before any GPU step exists. Recipes that do not resolve
// are left to assemble, which reports their error.
func Resolve(ctx context.Context, r *imagepin.Resolver, sel *selection.Selection, profiles *agents.Set, getenv func(string) string) *imagepin.Result {
	var refs []string
	for _, run := range sel.Runs {
		res, err := workloads.Resolve(run.Recipe, profiles, getenv)
		if err != nil || run.Recipe.VLLM.Build != nil {
			continue // a built image is in no registry
		}
		refs = append(refs, res.PullImage)
	}
	return r.Resolve(ctx, refs)
}

// PinNotes are what the build's notes must say about the images: that
// they were not pinned, what did not resolve, and warnings.
func PinNotes(pins *imagepin.Result) []string {
	if pins == nil || len(pins.Pins) == 0 {
		return nil // no image: nothing went unpinned
	}
	var out []string
	if pins.Note != "" {
		out = append(out, pins.Note)
	}
	for _, p := range pins.Pins {
		switch {
		case p.Err != nil:
			out = append(out, fmt.Sprintf(":warning: Image not resolved, its recipes run no GPU step: %v", p.Err))
		case p.Warning != "":
			out = append(out, fmt.Sprintf("Image %s pinned to %s with a warning: %s", p.Ref, p.Digest, p.Warning))
		}
	}
	return out
}

// Pin is what a recipe's step runs: the image the pod or host pulls
// (Pull), the image the runner records (Image, VLLM_IMAGE), and the vLLM
// commit; Err when the image did not resolve.
type Pin struct {
	Pull, Image, Commit string
	Err                 error
}

// For looks up res's image. Without a resolution (nil pins, a skipped
// one) the tags stay. A profile's rewrite (a pull-through cache) keeps the
// digest: the cache serves the manifest it mirrors, so the recipe's own
// reference is pinned to the digest the cache answered.
func For(pins *imagepin.Result, res *workloads.Resolved) Pin {
	ip := Pin{Pull: res.PullImage, Image: res.Image.Image, Commit: res.Image.Commit}
	if pins == nil {
		return ip
	}
	p, ok := pins.Lookup(res.PullImage)
	if !ok {
		return ip
	}
	if p.Err != nil {
		ip.Err = p.Err
		return ip
	}
	if p.Digest == "" {
		return ip
	}
	ip.Pull = p.Pinned
	ip.Image = withDigest(res.Image.Image, p.Digest)
	if p.Commit != "" {
		ip.Commit = p.Commit
	}
	return ip
}

// withDigest is image with its digest set to digest.
func withDigest(image, digest string) string {
	if at := strings.LastIndex(image, "@"); at >= 0 {
		image = image[:at]
	}
	return image + "@" + digest
}

// Problem is the step label's few words on why an image did not
// resolve: a registry that does not answer is not a missing image.
func Problem(err error) string {
	var e *imagepin.Error
	if !errors.As(err, &e) {
		return "image not resolved"
	}
	switch e.Kind {
	case imagepin.NotFound:
		return "image not found"
	case imagepin.Unauthorized, imagepin.Denied:
		return "registry refused access to the image (" + string(e.Kind) + ")"
	case imagepin.Timeout, imagepin.Unreachable:
		return "registry unreachable"
	case imagepin.RateLimited:
		return "registry rate limited"
	case imagepin.RegistryError:
		return "registry error"
	case imagepin.InvalidRef:
		return "not an image reference"
	}
	return "image not resolved"
}

// SourceNotes say, when the build names an image or a commit, what image
// each recipe got and why: a build-wide VLLM_IMAGE applies only to the
// recipes of its platform.
func SourceNotes(sel *selection.Selection, profiles *agents.Set, getenv func(string) string) []string {
	img, commit := strings.TrimSpace(getenv("VLLM_IMAGE")), strings.TrimSpace(getenv("VLLM_COMMIT"))
	if img == "" && commit == "" && len(workloads.PlatformPins(getenv)) == 0 {
		return nil
	}
	var out []string
	for _, run := range sel.Runs {
		res, err := workloads.Resolve(run.Recipe, profiles, getenv)
		if err != nil {
			out = append(out, fmt.Sprintf("Image of %s: %v", run.Recipe.Name, err))
			continue
		}
		line := fmt.Sprintf("Image of %s (%s, %s): %s, from %s", run.Recipe.Name, res.Profile.GPU, res.Profile.Platform(), res.Image.Image, res.Image.Source)
		if res.Image.Note != "" {
			line += "; " + res.Image.Note
		}
		out = append(out, line)
	}
	return out
}

// Unpinned is a selected recipe whose platform has no image in this
// build (workloads.ErrNoPlatformImage).
type Unpinned struct {
	Recipe *workloads.Recipe
	Err    error
}

// SkipUnpinned takes out of sel the recipes whose platform the
// build pins no image for, and lists them among the skipped with why: a
// build that pins VLLM_IMAGE_CUDA only measures CUDA. Their steps are
// shown skipped, not dropped, so the build page says what did not run.
func SkipUnpinned(sel *selection.Selection, profiles *agents.Set, getenv func(string) string) []Unpinned {
	if len(workloads.PlatformPins(getenv)) == 0 {
		return nil
	}
	var out []Unpinned
	kept := sel.Runs[:0]
	for _, run := range sel.Runs {
		_, err := workloads.Resolve(run.Recipe, profiles, getenv)
		if !errors.Is(err, workloads.ErrNoPlatformImage) {
			kept = append(kept, run)
			continue
		}
		out = append(out, Unpinned{Recipe: run.Recipe, Err: err})
		sel.Skipped = append(sel.Skipped, selection.Skipped{Name: run.Recipe.Name, Path: run.Recipe.Path, Reason: err.Error()})
		sel.Notes = append(sel.Notes, fmt.Sprintf("Skipped %s: %v", run.Recipe.Name, errors.Unwrap(err)))
	}
	sel.Runs = kept
	return out
}
