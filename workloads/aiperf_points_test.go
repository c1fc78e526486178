package workloads

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAIPerfPoints(t *testing.T) {
	t.Parallel()
	arg := func(flag, v string) BenchArg { return BenchArg{Flag: flag, Values: []string{v}} }
	tests := []struct {
		name    string
		args    []BenchArg
		want    []AIPerfPoint
		wantErr string
	}{
		{name: "no sweep", args: []BenchArg{arg("--concurrency", "4"), arg("--request-count", "8")}, want: []AIPerfPoint{{Concurrency: 4, Requests: 8}}},
		{name: "nothing given", want: []AIPerfPoint{{}}},
		{name: "a concurrency sweep", args: []BenchArg{arg("--concurrency", "16,4")},
			want: []AIPerfPoint{{Name: "concurrency_16", Concurrency: 16}, {Name: "concurrency_4", Concurrency: 4}}},
		{name: "zip", args: []BenchArg{arg("--sweep-type", "zip"), arg("--concurrency", "2,3"), arg("--request-count", "6,9")},
			want: []AIPerfPoint{{Name: "concurrency_2__requests_6", Concurrency: 2, Requests: 6}, {Name: "concurrency_3__requests_9", Concurrency: 3, Requests: 9}}},
		{name: "grid", args: []BenchArg{arg("--concurrency", "1,2"), arg("--request-count", "5,6")},
			want: []AIPerfPoint{{"concurrency_1__requests_5", 1, 5}, {"concurrency_1__requests_6", 1, 6}, {"concurrency_2__requests_5", 2, 5}, {"concurrency_2__requests_6", 2, 6}}},
		{name: "zip with one list", args: []BenchArg{arg("--sweep-type", "zip"), arg("--concurrency", "2,3"), arg("--request-count", "6")},
			want: []AIPerfPoint{{"concurrency_2", 2, 6}, {"concurrency_3", 3, 6}}},
		{name: "zip of unequal lists", args: []BenchArg{arg("--sweep-type", "zip"), arg("--concurrency", "2,3"), arg("--request-count", "6,7,8")}, wantErr: "same length"},
		{name: "not a number", args: []BenchArg{arg("--concurrency", "2,x")}, wantErr: "positive integer"},
	}
	for _, tt := range tests {
		got, err := AIPerfConfig{Name: "c", Args: tt.args}.Points()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Points() error = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Points() error = %v", tt.name, err)
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("%s: Points() diff (-got +want):\n%s", tt.name, diff)
		}
	}
}
