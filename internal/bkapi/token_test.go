package bkapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/google/go-cmp/cmp"
)

func TestTokenFromEnvOrSecret(t *testing.T) {
	t.Parallel()
	const secretValue = "bkua_from0the0secret0store"
	type secretResult struct {
		value string
		err   error
	}
	tests := []struct {
		name       string
		env        map[string]string
		secret     *secretResult // nil: no secret function
		secretName string
		want       string
		wantCalls  []string
		wantErr    bool
	}{
		{
			name:       "env var wins",
			env:        map[string]string{"BUILDKITE_API_TOKEN": " bkua_env \n"},
			secret:     &secretResult{value: secretValue},
			secretName: "BUILDKITE_API_TOKEN",
			want:       "bkua_env",
		},
		{
			name:       "secret when env is empty, trailing newline dropped",
			env:        map[string]string{"BUILDKITE_API_TOKEN": ""},
			secret:     &secretResult{value: secretValue + "\n"},
			secretName: "BUILDKITE_API_TOKEN",
			want:       secretValue,
			wantCalls:  []string{"BUILDKITE_API_TOKEN"},
		},
		{
			name:       "failed secret get",
			secret:     &secretResult{value: secretValue, err: errors.New("exit status 1: secret value " + secretValue + " rejected")},
			secretName: "BUILDKITE_API_TOKEN",
			wantCalls:  []string{"BUILDKITE_API_TOKEN"},
			wantErr:    true,
		},
		{
			name:       "empty secret",
			secret:     &secretResult{value: "\n"},
			secretName: "BUILDKITE_API_TOKEN",
			wantCalls:  []string{"BUILDKITE_API_TOKEN"},
			wantErr:    true,
		},
		{
			name:       "no secret function",
			secretName: "BUILDKITE_API_TOKEN",
			wantErr:    true,
		},
		{
			name:    "no secret name",
			secret:  &secretResult{value: secretValue},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := func(k string) string { return tt.env[k] }
			var calls []string
			var get func(context.Context, string) (string, error)
			if tt.secret != nil {
				get = func(_ context.Context, name string) (string, error) {
					calls = append(calls, name)
					return tt.secret.value, tt.secret.err
				}
			}

			got, err := bkapi.TokenFromEnvOrSecret(context.Background(), env, get, "BUILDKITE_API_TOKEN", tt.secretName)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("TokenFromEnvOrSecret() error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("TokenFromEnvOrSecret() = %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff(calls, tt.wantCalls); diff != "" {
				t.Errorf("secret get calls diff (-got +want)\n%s", diff)
			}
			if err != nil {
				if !errors.Is(err, bkapi.ErrNoToken) {
					t.Errorf("TokenFromEnvOrSecret() error = %v, want errors.Is ErrNoToken", err)
				}
				if strings.Contains(err.Error(), secretValue) {
					t.Errorf("TokenFromEnvOrSecret() error = %q contains the secret", err)
				}
			}
		})
	}
}
