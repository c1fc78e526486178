package recipeimage

import (
	"fmt"
	"testing"

	"github.com/benchkite/benchkite/generator/internal/imagepin"
)

// The failing step's label says what failed: a registry that does not
// answer is not a missing image, nor is a refused login.
func TestImageProblemLabel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		kind imagepin.Kind
		want string
	}{
		{imagepin.NotFound, "image not found"},
		{imagepin.Unreachable, "registry unreachable"},
		{imagepin.Timeout, "registry unreachable"},
		{imagepin.Unauthorized, "registry refused access to the image (unauthorized)"},
		{imagepin.Denied, "registry refused access to the image (denied)"},
		{imagepin.RateLimited, "registry rate limited"},
	} {
		err := fmt.Errorf("pin: %w", &imagepin.Error{Image: "x:y", Kind: tt.kind})
		if got := Problem(err); got != tt.want {
			t.Errorf("Problem(%s) = %q, want %q", tt.kind, got, tt.want)
		}
	}
}
