package cancel

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A signal repeated inside the window is one cancel; one after it kills
// every process once and leaves the run to publish; a run that does not
// finish within the budget is left.
func TestCancelerCountsRepeatsOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		gaps      []time.Duration // after the first signal
		finish    bool            // the run ends after the signals
		wantKills int
		wantAll   int // killEverything calls
		wantCode  int
		wantLog   string
	}{
		{name: "one", finish: true, wantCode: 143},
		{name: "doubled", gaps: []time.Duration{time.Millisecond}, finish: true, wantCode: 143, wantLog: "the same cancel"},
		{name: "tripled", gaps: []time.Duration{time.Millisecond, 1500 * time.Millisecond}, finish: true, wantCode: 143, wantLog: "the same cancel"},
		{name: "second cancel", gaps: []time.Duration{3 * time.Second}, finish: true, wantKills: 1, wantCode: 143, wantLog: "second cancel"},
		{name: "second cancel, run stuck", gaps: []time.Duration{3 * time.Second, 4 * time.Second}, wantKills: 1, wantAll: 1, wantCode: 143, wantLog: "killing it and exiting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Unix(1000, 0)
			var mu sync.Mutex
			now := start
			var causes []error
			kills, alls := 0, 0
			var log strings.Builder
			read := make(chan struct{}, 8)
			budget := 5 * time.Second
			if !tt.finish {
				budget = 50 * time.Millisecond
			}
			c := &Canceler{
				Cancel: func(err error) { causes = append(causes, err) },
				Stderr: &log,
				Now: func() time.Time {
					mu.Lock()
					defer mu.Unlock()
					read <- struct{}{}
					return now
				},
				Window:         2 * time.Second,
				Budget:         budget,
				KillAll:        func() []int { kills++; return nil },
				KillEverything: func() { alls++ },
			}
			sigs := make(chan os.Signal)
			done := make(chan int, 1)
			result := make(chan int)
			go func() { result <- c.Wait(sigs, done) }()
			for _, g := range append([]time.Duration{0}, tt.gaps...) {
				mu.Lock()
				now = start.Add(g)
				mu.Unlock()
				sigs <- syscall.SIGTERM
				<-read // the loop has read the clock
			}
			if tt.finish {
				done <- 143
			}
			var code int
			select {
			case code = <-result:
			case <-time.After(10 * time.Second):
				t.Fatal("wait did not return")
			}
			if len(causes) != 1 {
				t.Errorf("cancel called %d times, want 1", len(causes))
			} else if sig := (SignalError{}); !errors.As(causes[0], &sig) {
				t.Errorf("cancel cause = %v, want the signal", causes[0])
			}
			if kills != tt.wantKills {
				t.Errorf("killAll called %d times, want %d", kills, tt.wantKills)
			}
			if alls != tt.wantAll {
				t.Errorf("killEverything called %d times, want %d", alls, tt.wantAll)
			}
			if code != tt.wantCode {
				t.Errorf("code = %d, want %d", code, tt.wantCode)
			}
			// The first signal is logged when taken: the window starts there.
			if !strings.HasPrefix(log.String(), "runner: terminated: cancelling; the same signal within 2s is the same cancel\n") {
				t.Errorf("log does not start with the cancel:\n%s", log.String())
			}
			if !strings.Contains(log.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, log.String())
			}
		})
	}
}
