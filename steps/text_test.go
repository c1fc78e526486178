package steps_test

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/steps/steptest"
	"github.com/buildkite/interpolate"
)

// hostileTexts are strings a recipe can put in a message or a label.
var hostileTexts = []string{
	"",
	"plain",
	`costs \$5 of GPU time`,
	`\\\$X and \$HOME`,
	`trailing \`,
	`\c stops printf`,
	`\n \t \0101 \\`,
	"$HOME ${X:-y} $(date) `id`",
	"%s %b %%",
	"two\nlines",
}

func TestTextValueSurvivesUploadAndPrintf(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, text := range hostileTexts {
		v := steps.TextValue(text)
		if err := steps.CheckInterpolation(v); err != nil {
			t.Errorf("CheckInterpolation(TextValue(%q)) = %v, want nil", text, err)
			continue
		}
		back, err := interpolate.Interpolate(agentEnv, steps.EscapeInterpolation(v))
		if err != nil || back != v {
			t.Errorf("Interpolate(EscapeInterpolation(%q)) = %q, %v; want it back", v, back, err)
			continue
		}
		cmd := exec.Command(sh, "-c", steps.PrintTextCommand("T"))
		cmd.Env = []string{"T=" + back}
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("sh -c %q with T=%q: %v", steps.PrintTextCommand("T"), back, err)
			continue
		}
		if got := string(out); got != text+"\n" {
			t.Errorf("printed TextValue(%q) = %q, want the text and a newline", text, got)
		}
	}
}

func TestLabelText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`a\$b`, `a\\$b`},
		{`a\\$b`, `a\\$b`},
		{`a\\\$b \$`, `a\\\\$b \\$`},
		{`a\b$`, `a\b$`},
	}
	for _, tt := range tests {
		got := steps.LabelText(tt.in)
		if got != tt.want {
			t.Errorf("LabelText(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if err := steps.CheckInterpolation(got); err != nil {
			t.Errorf("CheckInterpolation(LabelText(%q)) = %v", tt.in, err)
		}
	}
}

func TestCheckStep(t *testing.T) {
	t.Parallel()
	ok := steps.CommandStep{Label: "$HOME", Commands: []string{"echo $X"}}
	if err := steps.CheckStep(ok); err != nil {
		t.Errorf("CheckStep(%+v) = %v, want nil", ok, err)
	}
	bad := steps.CommandStep{Commands: []string{"true"}, Env: map[string]string{"A": `\$5`}}
	if err := steps.CheckStep(bad); !errors.Is(err, steps.ErrUnescapable) {
		t.Errorf("CheckStep(%+v) = %v, want ErrUnescapable", bad, err)
	}
	if err := steps.CheckStep(nil); err == nil {
		t.Error("CheckStep(nil) = nil, want an error")
	}
}

// TestTextThroughAgent uploads every hostile text as a TextValue with the
// real agent, which must read back exactly the value that was meant.
func TestTextThroughAgent(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	env := map[string]string{}
	for i, text := range hostileTexts {
		env[string(rune('A'+i))] = steps.TextValue(text)
	}
	p := steps.Pipeline{Steps: []steps.Step{steps.CommandStep{
		Key: "t", Label: steps.LabelText(`x\$y`), Commands: []string{steps.PrintTextCommand("A")}, Env: env,
	}}}
	upload, err := steps.MarshalForUpload(p)
	if err != nil {
		t.Fatalf("MarshalForUpload() error = %v", err)
	}
	want, err := steps.Marshal(p)
	if err != nil {
		t.Fatalf("Marshal() error = %v", err)
	}
	steptest.AssertAgentReads(t, agent, upload, want)
}
