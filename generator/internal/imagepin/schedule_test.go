package imagepin

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/benchkite/benchkite/internal/oci"
	"github.com/google/go-cmp/cmp"
)

// No more than Concurrency images are resolved at once, and every image
// still is. synctest.Wait returns once every goroutine is blocked, so the
// count of started resolutions is exact, not a race against a clock.
func TestResolveBoundsConcurrency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var started []string
		release := make(chan struct{})
		r := &Resolver{Concurrency: 2, resolveFunc: func(_ context.Context, _ *oci.Client, ref oci.Ref) resolved {
			mu.Lock()
			started = append(started, ref.Name())
			mu.Unlock()
			<-release
			return resolved{digest: "sha256:" + fmt.Sprintf("%064d", 0)}
		}}
		var refs []string
		for i := range 5 {
			refs = append(refs, fmt.Sprintf("registry.example/img%d:t", i))
		}
		done := make(chan *Result)
		go func() { done <- r.Resolve(context.Background(), refs) }()

		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(started)
		}
		for want := 2; want <= 5; want++ {
			synctest.Wait()
			if got := count(); got != want {
				t.Fatalf("resolutions started = %d, want %d", got, want)
			}
			release <- struct{}{}
		}
		// Four released; the fifth is the last one running.
		release <- struct{}{}
		res := <-done
		var pinned []string
		for _, p := range res.Pins {
			pinned = append(pinned, p.Pinned)
		}
		var want []string
		for _, ref := range refs {
			want = append(want, ref+"@sha256:"+fmt.Sprintf("%064d", 0))
		}
		if diff := cmp.Diff(pinned, want); diff != "" {
			t.Errorf("Resolve() pinned diff (-got +want):\n%s", diff)
		}
	})
}
