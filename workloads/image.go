package workloads

import (
	"errors"
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
	// Source is VLLM_IMAGE_<PLATFORM>, VLLM_IMAGE, VLLM_COMMIT, recipe,
	// build or default.
	Source string
	// Note explains a choice a person might not expect, such as an
	// ignored VLLM_IMAGE.
	Note string
}

// ErrBuildOverride: a recipe that builds its image was given a build-wide
// image or commit; the two cannot both say what runs.
var ErrBuildOverride = errors.New("vllm.build cannot be combined with VLLM_IMAGE or VLLM_COMMIT")

// ErrNoPlatformImage: the build pins images per platform (VLLM_IMAGE_CUDA,
// VLLM_IMAGE_ROCM, VLLM_IMAGE_XPU) but not this recipe's, and sets no
// VLLM_IMAGE: such a build names every platform it wants run, so there is
// nothing representative to run here. The pipeline shows the recipe as a
// skipped step.
var ErrNoPlatformImage = errors.New("no image for this platform in this build")

// PlatformImageEnv is the build variable that pins platform p's image:
// VLLM_IMAGE_CUDA, VLLM_IMAGE_ROCM or VLLM_IMAGE_XPU, for a build whose
// platforms' images are separate artifacts with unrelated tags.
func PlatformImageEnv(p agents.Platform) string {
	return "VLLM_IMAGE_" + strings.ToUpper(string(p))
}

// platforms are the platforms a build may pin images for.
var platforms = []agents.Platform{agents.CUDA, agents.ROCm, agents.XPU}

// PlatformPins lists the per-platform image variables env sets, in
// platform order.
func PlatformPins(env agents.Env) []string {
	var out []string
	for _, p := range platforms {
		if name := PlatformImageEnv(p); strings.TrimSpace(env(name)) != "" {
			out = append(out, name)
		}
	}
	return out
}

// ChooseImage picks the image. The platform's own pin
// (PlatformImageEnv) wins over everything; a build that pins other
// platforms only, and sets no VLLM_IMAGE, has none for this one
// (ErrNoPlatformImage). Then VLLM_IMAGE wins when it is an image for
// the profile's platform (ROCm for AMD, CUDA for NVIDIA, XPU for Intel): a
// build testing one platform's image for the whole fleet leaves the other
// platforms' recipes as they were. A commit in an ignored image's tag
// picks nothing: another platform's nightly of that commit is another
// build, which nobody asked to test. Then VLLM_COMMIT as
// <repo>:nightly-<sha>; then the recipe's image; then <repo>:nightly. The
// note says what was ignored and why. A recipe that builds its image
// takes neither variable (ErrBuildOverride).
func ChooseImage(r *Recipe, p agents.Profile, env agents.Env) (ImageChoice, error) {
	img := strings.TrimSpace(env("VLLM_IMAGE"))
	c := strings.TrimSpace(env("VLLM_COMMIT"))
	pinVar := PlatformImageEnv(p.Platform())
	pinned := strings.TrimSpace(env(pinVar))
	if r.VLLM.Build != nil && pinned != "" && pinned != r.VLLM.Image {
		return ImageChoice{}, fmt.Errorf("%w: %s is set, and the recipe builds %s from %s; unset it or run another recipe", ErrBuildOverride, pinVar, r.VLLM.Image, r.VLLM.Build.Dockerfile)
	}
	if pinned != "" && r.VLLM.Build == nil {
		ref, err := ParseImageRef(pinned)
		if err != nil {
			return ImageChoice{}, fmt.Errorf("%s: %w", pinVar, err)
		}
		var note string
		if got := ImagePlatform(ref); got != p.Platform() {
			note = fmt.Sprintf("%s=%s does not look like a %s image (its name reads %s); used as pinned", pinVar, pinned, p.Platform(), got)
		}
		return ImageChoice{Image: pinned, Commit: CommitFromImage(pinned), Source: pinVar, Note: note}, nil
	}
	if pins := PlatformPins(env); len(pins) > 0 && pinned == "" && img == "" && r.VLLM.Build == nil {
		return ImageChoice{}, fmt.Errorf("%w: it pins %s but not %s, and sets no VLLM_IMAGE; set %s to run %s", ErrNoPlatformImage, strings.Join(pins, ", "), pinVar, pinVar, r.Name)
	}
	if r.VLLM.Build != nil {
		note := fmt.Sprintf("built on the host from %s", r.VLLM.Build.Dockerfile)
		if img != "" && img != r.VLLM.Image {
			// Another platform's image is ignored here as everywhere.
			ref, err := ParseImageRef(img)
			if err != nil || ImagePlatform(ref) == p.Platform() {
				return ImageChoice{}, fmt.Errorf("%w: the recipe builds %s from %s; unset them or run another recipe", ErrBuildOverride, r.VLLM.Image, r.VLLM.Build.Dockerfile)
			}
			note += fmt.Sprintf("; VLLM_IMAGE=%s ignored: it is a %s image and %s needs %s", img, ImagePlatform(ref), p.GPU, p.Platform())
		}
		if c != "" {
			return ImageChoice{}, fmt.Errorf("%w: the recipe builds %s from %s; unset them or run another recipe", ErrBuildOverride, r.VLLM.Image, r.VLLM.Build.Dockerfile)
		}
		return ImageChoice{Image: r.VLLM.Image, Source: "build", Note: note}, nil
	}
	var note string
	if img != "" {
		ref, err := ParseImageRef(img)
		if err != nil {
			return ImageChoice{}, fmt.Errorf("VLLM_IMAGE: %w", err)
		}
		want, got := p.Platform(), ImagePlatform(ref)
		if want == got {
			return ImageChoice{Image: img, Commit: CommitFromImage(img), Source: "VLLM_IMAGE"}, nil
		}
		note = fmt.Sprintf("VLLM_IMAGE=%s ignored: it is a %s image and %s needs %s", img, got, p.GPU, want)
		if c := commitInTag(ref.Tag); c != "" {
			note += fmt.Sprintf("; the commit its tag names (%s) selects no %s image", c, want)
		}
	}
	if c != "" {
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

// ImagePlatform is the platform an image is built for, read from its
// repository and tag as vLLM names them: rocm or xpu in either, else cuda.
func ImagePlatform(ref ImageRef) agents.Platform {
	s := strings.ToLower(ref.Repo + ":" + ref.Tag)
	switch {
	case strings.Contains(s, "rocm"):
		return agents.ROCm
	case strings.Contains(s, "xpu"):
		return agents.XPU
	}
	return agents.CUDA
}

// tagCommitRE finds a commit at the end of a tag (nightly-<sha>,
// v0.11.0-<sha>); it must hold a letter, so dates are not commits.
var tagCommitRE = regexp.MustCompile(`(?:^|[-_.])([0-9a-f]{7,40})$`)

// commitInTag is the vLLM commit a tag names, "" when none.
func commitInTag(tag string) string {
	m := tagCommitRE.FindStringSubmatch(tag)
	if m == nil || !strings.ContainsAny(m[1], "abcdef") {
		return ""
	}
	return m[1]
}
