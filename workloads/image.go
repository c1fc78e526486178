package workloads

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/benchkite/benchkite/agents"
)

// hostLabel is one dot-separated part of a registry host name.
const hostLabel = `[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?`

// Image references as docker understands them:
// [host[:port]/]path[:tag][@sha256:digest].
var (
	// The first component is a registry only if it looks like a host (a
	// dot, a port, or localhost), as docker decides; otherwise it is part
	// of the lower-case repository path.
	imageRepoRE = regexp.MustCompile(`^(?:(?:localhost|` + hostLabel + `(?:\.` + hostLabel + `)+)(?::[0-9]+)?/|` + hostLabel + `:[0-9]+/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	imageTagRE    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	imageDigestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	commitRE      = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
	nightlyTagRE  = regexp.MustCompile(`^nightly-([0-9a-f]{7,40})$`)
)

// ImageRef is a parsed image reference.
type ImageRef struct {
	Repo, Tag, Digest string
}

// ParseImageRef splits and checks an image reference.
func ParseImageRef(s string) (ImageRef, error) {
	var ref ImageRef
	rest := s
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		ref.Digest = rest[at+1:]
		rest = rest[:at]
		if !imageDigestRE.MatchString(ref.Digest) {
			return ref, fmt.Errorf("image %q: digest must be sha256:<64 hex>", s)
		}
	}
	// A ':' after the last '/' starts the tag; one before it is a port.
	if colon := strings.LastIndex(rest, ":"); colon > strings.LastIndex(rest, "/") {
		ref.Tag = rest[colon+1:]
		rest = rest[:colon]
		if !imageTagRE.MatchString(ref.Tag) {
			return ref, fmt.Errorf("image %q: tag %q is not a valid tag", s, ref.Tag)
		}
	}
	ref.Repo = rest
	if len(s) > 255 || !imageRepoRE.MatchString(rest) {
		return ref, fmt.Errorf("%q is not a valid image reference ([registry/]repo[:tag][@sha256:digest], lower-case repo)", s)
	}
	return ref, nil
}

func checkImageRef(s string) error {
	_, err := ParseImageRef(s)
	return err
}

// CommitFromImage reads the vLLM commit out of a nightly-<sha> tag.
func CommitFromImage(image string) string {
	ref, err := ParseImageRef(image)
	if err != nil {
		return ""
	}
	if m := nightlyTagRE.FindStringSubmatch(ref.Tag); m != nil {
		return m[1]
	}
	return ""
}

// ImageChoice is the image a job runs and what decided it.
type ImageChoice struct {
	Image  string
	Commit string
	// Source is VLLM_IMAGE, VLLM_COMMIT, recipe or default.
	Source string
	// Note explains a choice a person might not expect, such as an
	// ignored VLLM_IMAGE.
	Note string
}

// ChooseImage picks the image: VLLM_IMAGE wins, except that an AMD profile
// ignores a non-ROCm image (a CUDA build cannot serve on ROCm; the build
// may be testing an NVIDIA image for the whole fleet); then VLLM_COMMIT as
// <repo>:nightly-<sha>; then the recipe's image; then <repo>:nightly.
func ChooseImage(r *Recipe, p agents.Profile, env agents.Env) (ImageChoice, error) {
	var note string
	if img := strings.TrimSpace(env("VLLM_IMAGE")); img != "" {
		ref, err := ParseImageRef(img)
		if err != nil {
			return ImageChoice{}, fmt.Errorf("VLLM_IMAGE: %w", err)
		}
		if p.Vendor == agents.AMD && !strings.Contains(ref.Repo, "rocm") {
			note = fmt.Sprintf("VLLM_IMAGE=%s ignored: %s needs a ROCm image", img, p.GPU)
		} else {
			return ImageChoice{Image: img, Commit: CommitFromImage(img), Source: "VLLM_IMAGE"}, nil
		}
	}
	if c := strings.TrimSpace(env("VLLM_COMMIT")); c != "" {
		if !commitRE.MatchString(c) {
			return ImageChoice{}, fmt.Errorf("VLLM_COMMIT %q must be 7 to 40 lower-case hex digits", c)
		}
		return ImageChoice{Image: p.ImageRepo + ":nightly-" + c, Commit: c, Source: "VLLM_COMMIT", Note: note}, nil
	}
	if r.VLLM.Image != "" {
		return ImageChoice{Image: r.VLLM.Image, Commit: CommitFromImage(r.VLLM.Image), Source: "recipe", Note: note}, nil
	}
	return ImageChoice{Image: p.ImageRepo + ":nightly", Source: "default", Note: note}, nil
}
