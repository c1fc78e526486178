package job

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestCksumMatchesPOSIX(t *testing.T) {
	t.Parallel()
	// Values printed by GNU coreutils' `printf %s INPUT | cksum`.
	tests := []struct {
		in   string
		want uint32
	}{
		{"", 4294967295},
		{"a", 1220704766},
		{"job-1", 1445538299},
	}
	for _, tt := range tests {
		if got := cksum([]byte(tt.in)); got != tt.want {
			t.Errorf("cksum(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
	// Against the system's cksum, where there is one, on job-id-like input.
	bin, err := exec.LookPath("cksum")
	if err != nil {
		t.Skip("no cksum on PATH; the fixed values above still checked")
	}
	for _, in := range []string{"0190f3a2-aaaa-bbbb-cccc-ddddeeeeffff", "job-1", "01936d4e-1c2f-4a5b-9c8d-7e6f5a4b3c2d", strings.Repeat("x", 300)} {
		cmd := exec.Command(bin)
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		want, err := strconv.ParseUint(strings.Fields(string(out))[0], 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		if got := cksum([]byte(in)); got != uint32(want) {
			t.Errorf("cksum(%q) = %d, system cksum says %d", in, got, want)
		}
	}
}

func TestJobPort(t *testing.T) {
	t.Parallel()
	// 20000 + 1445538299 % 40000.
	if got := JobPort("job-1"); got != 38299 {
		t.Errorf("JobPort(job-1) = %d, want 38299", got)
	}
	for _, id := range []string{"", "job-1", "0190f3a2-aaaa-bbbb-cccc-ddddeeeeffff"} {
		p := JobPort(id)
		if p < 20000 || p >= 60000 {
			t.Errorf("JobPort(%q) = %d, outside [20000, 60000)", id, p)
		}
		if want := 20000 + int(cksum([]byte(id))%40000); p != want {
			t.Errorf("JobPort(%q) = %d, want %d", id, p, want)
		}
	}
}
