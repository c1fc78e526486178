package ready

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// BenchmarkReadyDetection measures the time from the server turning
// healthy to Wait returning. The server turns healthy just after a probe,
// so this is the worst case: about one interval (half of it on average).
func BenchmarkReadyDetection(b *testing.B) {
	for _, interval := range []time.Duration{10 * time.Millisecond, DefaultInterval} {
		b.Run("interval="+interval.String(), func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				srv := newFakeServer(b, http.StatusServiceUnavailable, modelList)
				errc := make(chan error, 1)
				go func() {
					errc <- Wait(context.Background(), Options{BaseURL: srv.URL, Model: "org/model", Interval: interval})
				}()
				<-srv.firstProbe
				b.StartTimer()
				start := time.Now()
				srv.healthStatus.Store(http.StatusOK)
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				srv.Close()
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/detect")
		})
	}
}

// BenchmarkExitDetection measures the time from the server process ending
// to Wait returning, at the default interval.
func BenchmarkExitDetection(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		srv := newFakeServer(b, http.StatusServiceUnavailable, "")
		exited := make(chan struct{})
		errc := make(chan error, 1)
		go func() { errc <- Wait(context.Background(), Options{BaseURL: srv.URL, Exited: exited}) }()
		<-srv.firstProbe
		b.StartTimer()
		start := time.Now()
		close(exited)
		if err := <-errc; err == nil {
			b.Fatal("Wait() = nil, want ErrServerExited")
		}
		total += time.Since(start)
		srv.Close()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/detect")
}
