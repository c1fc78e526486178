package summary

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func f(v float64) *float64 { return &v }

func TestPriceTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		run   BenchRun
		price float64
		gpus  int
		want  *TokenCost
	}{
		// 8 GPUs at 2.5 cost 20 an hour; 10,000 output tok/s are 36 M an
		// hour, 90,000 in all 324 M, so 80,000 input 288 M.
		{name: "priced", run: BenchRun{Status: StatusOK, OutputThroughput: 10000, TotalTokenThroughput: 90000}, price: 2.5, gpus: 8,
			want: &TokenCost{Input: f(20.0 / 288), Output: f(20.0 / 36), Total: f(20.0 / 324)}},
		{name: "no input throughput recorded", run: BenchRun{Status: StatusOK, OutputThroughput: 1000, TotalTokenThroughput: 1000}, price: 3.6, gpus: 1,
			want: &TokenCost{Output: f(1), Total: f(1)}},
		{name: "no price", run: BenchRun{Status: StatusOK, OutputThroughput: 10000, TotalTokenThroughput: 90000}, gpus: 8},
		{name: "a failed run", run: BenchRun{Status: StatusFailed, OutputThroughput: 10000, TotalTokenThroughput: 90000}, price: 2.5, gpus: 8},
		{name: "no throughput", run: BenchRun{Status: StatusOK}, price: 2.5, gpus: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.run
			r.PriceTokens(tt.price, tt.gpus)
			if diff := cmp.Diff(r.Cost, tt.want, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("Cost diff (-got +want):\n%s", diff)
			}
		})
	}
}
