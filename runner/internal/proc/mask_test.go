package proc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMaskEnv(t *testing.T) {
	t.Parallel()
	env := []string{
		"HF_TOKEN=hf_abc",
		"HUGGING_FACE_HUB_TOKEN=hf_def",
		"BUILDKITE_AGENT_ACCESS_TOKEN=bk",
		"AWS_SECRET=s",
		"OPENAI_API_KEY=k",
		"DB_PASSWORD_FILE=p",
		"my_token=lower",
		"CUSTOM_CRED=c",
		"EMPTY_TOKEN=",
		"PATH=/usr/bin",
		"VLLM_USE_V1=1",
		"TOKENIZERS_PARALLELISM=false",
		"KEYBOARD=us",
		"NO_EQUALS_SIGN",
		"EQUALS_IN_VALUE=a=b",
		"MY_API_KEY=sk-live",
		"MY_APIKEY_V2=sk-live",
		"BUILDKITE_STEP_KEY=recipe:x",
		"buildkite_group_key=g",
		"SSH_PRIVATE_KEY=k",
		"ADMIN_PASSWORD=p",
	}
	want := []string{
		"HF_TOKEN=***",
		"HUGGING_FACE_HUB_TOKEN=***",
		"BUILDKITE_AGENT_ACCESS_TOKEN=***",
		"AWS_SECRET=***",
		"OPENAI_API_KEY=***",
		"DB_PASSWORD_FILE=***",
		"my_token=***",
		"CUSTOM_CRED=***",
		"EMPTY_TOKEN=",
		"PATH=/usr/bin",
		"VLLM_USE_V1=1",
		"TOKENIZERS_PARALLELISM=false",
		"KEYBOARD=us",
		"NO_EQUALS_SIGN",
		"EQUALS_IN_VALUE=a=b",
		"MY_API_KEY=***",
		"MY_APIKEY_V2=***",
		"BUILDKITE_STEP_KEY=recipe:x",
		"buildkite_group_key=g",
		"SSH_PRIVATE_KEY=***",
		"ADMIN_PASSWORD=***",
	}
	got := MaskEnv(env, "custom_cred")
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("MaskEnv() diff (-got +want):\n%s", diff)
	}
	if env[0] != "HF_TOKEN=hf_abc" {
		t.Errorf("MaskEnv changed its input: %q", env[0])
	}
}
