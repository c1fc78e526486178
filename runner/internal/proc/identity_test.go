package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestIdentityAlive(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("identities need /proc")
	}
	self := Identity()
	if self == "" {
		t.Fatal("Identity() is empty on Linux")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	ns, _, _ := strings.Cut(self, "/")
	_, rest, _ := strings.Cut(self, "/")
	_, start, _ := strings.Cut(rest, "/")
	tests := []struct {
		name               string
		id                 string
		wantAlive, wantKnw bool
	}{
		{"this process", self, true, true},
		{"an ended process", ns + "/" + strconv.Itoa(cmd.Process.Pid) + "/1", false, true},
		{"this pid, another start", ns + "/" + strconv.Itoa(os.Getpid()) + "/" + start + "0", false, true},
		{"another namespace", "pid:[1]/1/1", false, false},
		{"malformed", "12345", false, false},
	}
	for _, tt := range tests {
		alive, known := IdentityAlive(tt.id)
		if alive != tt.wantAlive || known != tt.wantKnw {
			t.Errorf("%s: IdentityAlive(%q) = %t, %t; want %t, %t", tt.name, tt.id, alive, known, tt.wantAlive, tt.wantKnw)
		}
	}
}
