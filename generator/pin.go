package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/imagepin"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/workloads"
)

// pinImages resolves the image every selected recipe pulls, once per
// distinct image, before any GPU step exists. Recipes that do not resolve
// are left to assemble, which reports their error.
func pinImages(ctx context.Context, r *imagepin.Resolver, sel *selection.Selection, profiles *agents.Set, getenv func(string) string) *imagepin.Result {
	var refs []string
	for _, run := range sel.Runs {
		res, err := workloads.Resolve(run.Recipe, profiles, getenv)
		if err != nil {
			continue
		}
		refs = append(refs, res.PullImage)
	}
	return r.Resolve(ctx, refs)
}

// pinNotes are what the build's notes must say about the images: that
// they were not pinned, what did not resolve, and warnings.
func pinNotes(pins *imagepin.Result) []string {
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

// imagePin is what a recipe's step runs: the image the pod or host pulls,
// the image the runner records (VLLM_IMAGE), and the vLLM commit.
type imagePin struct {
	pull, image, commit string
	err                 error
}

// pinFor looks up res's image. Without a resolution (nil pins, a skipped
// one) the tags stay. A profile's rewrite (a pull-through cache) keeps the
// digest: the cache serves the manifest it mirrors, so the recipe's own
// reference is pinned to the digest the cache answered.
func pinFor(pins *imagepin.Result, res *workloads.Resolved) imagePin {
	ip := imagePin{pull: res.PullImage, image: res.Image.Image, commit: res.Image.Commit}
	if pins == nil {
		return ip
	}
	p, ok := pins.Lookup(res.PullImage)
	if !ok {
		return ip
	}
	if p.Err != nil {
		ip.err = p.Err
		return ip
	}
	if p.Digest == "" {
		return ip
	}
	ip.pull = p.Pinned
	ip.image = withDigest(res.Image.Image, p.Digest)
	if p.Commit != "" {
		ip.commit = p.Commit
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

// imageFailedStep stands in for a recipe whose image did not resolve: it
// fails on the CPU queue, under the recipe's own step key (so the report
// step and the history see the recipe failed), and no GPU is asked for.
// The registry's answer travels in an env var, never through a shell.
func imageFailedStep(name string, err error, queue string) steps.CommandStep {
	problems := err.Error() + "\nNo GPU step runs for this recipe; fix the image (VLLM_IMAGE, VLLM_COMMIT, the recipe's image) or push it, then rebuild."
	return failingStep(":warning: "+name+": "+imageProblem(err), contract.StepKey(name), "image not resolved", problems, queue)
}

// imageProblem is the step label's few words on why an image did not
// resolve: a registry that does not answer is not a missing image.
func imageProblem(err error) string {
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
