package summary

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSetAside(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 16, 30, 5, 123456789, time.FixedZone("x", 3600))
	got := SetAsideName("results/minimax_m3-mi355x", at)
	if want := "results/minimax_m3-mi355x.old-20261202T153005.123456789Z"; got != want {
		t.Errorf("SetAsideName() = %q, want %q", got, want)
	}
	tests := []struct {
		dir  string
		want bool
	}{
		{got, true},
		{got + "/", true},
		{"results/minimax_m3-mi355x", false},
		{"results/old-timer-h200", false},
		{"results/x.old-20261202", false},
		{"results/x.old-20261202T153005.123456789Z/summary.json", false},
	}
	var gotAll, wantAll []bool
	for _, tt := range tests {
		gotAll = append(gotAll, IsSetAside(tt.dir))
		wantAll = append(wantAll, tt.want)
	}
	if diff := cmp.Diff(gotAll, wantAll); diff != "" {
		t.Errorf("IsSetAside() diff (-got +want):\n%s", diff)
	}
}
