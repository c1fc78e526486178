package oci

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Credential is a registry login; the zero value is anonymous.
type Credential struct {
	Username, Password string
	// IdentityToken is an OAuth2 refresh token some registries (and their
	// credential helpers) give instead of a password.
	IdentityToken string
}

// DockerCredentials finds the login for a registry host as docker does:
// from $DOCKER_CONFIG/config.json (default ~/.docker/config.json), through
// the registry's credential helper (credHelpers), else the credential store
// (credsStore), else the file's own auths. No config, or no entry, is
// anonymous. Errors never carry a secret.
func DockerCredentials(registry string) (Credential, error) {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Credential{}, nil
		}
		dir = filepath.Join(home, ".docker")
	}
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Credential{}, nil
	}
	if err != nil {
		return Credential{}, fmt.Errorf("docker config: %w", err)
	}
	var cfg struct {
		Auths       map[string]dockerAuth `json:"auths"`
		CredHelpers map[string]string     `json:"credHelpers"`
		CredsStore  string                `json:"credsStore"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return Credential{}, fmt.Errorf("docker config %s: %w", path, err)
	}
	for key, helper := range cfg.CredHelpers {
		if authHost(key) == registry {
			return fromHelper(helper, serverURL(registry))
		}
	}
	if cfg.CredsStore != "" {
		return fromHelper(cfg.CredsStore, serverURL(registry))
	}
	for key, a := range cfg.Auths {
		if authHost(key) != registry {
			continue
		}
		c := Credential{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return Credential{}, fmt.Errorf("docker config %s: auths entry %s: auth is not base64", path, key)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return Credential{}, fmt.Errorf("docker config %s: auths entry %s: auth is not user:password", path, key)
			}
			c.Username, c.Password = user, pass
		}
		return c, nil
	}
	return Credential{}, nil
}

type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
}

// authHost is the registry host a docker config key names: keys may carry
// a scheme and a path (https://index.docker.io/v1/).
func authHost(key string) string {
	h := key
	if _, rest, ok := strings.Cut(h, "://"); ok {
		h = rest
	}
	h, _, _ = strings.Cut(h, "/")
	switch h {
	case "docker.io", "registry-1.docker.io":
		return DockerHub
	}
	return h
}

// serverURL is the name a credential helper knows a registry by.
func serverURL(registry string) string {
	if registry == DockerHub {
		return dockerHubAuthKey
	}
	return registry
}

// helperTimeout bounds a credential helper.
const helperTimeout = 30 * time.Second

// fromHelper runs docker-credential-<name> get, the credential helper
// protocol: the server on stdin, {Username, Secret} on stdout. A helper
// that has no entry says "credentials not found": anonymous.
func fromHelper(name, server string) (Credential, error) {
	ctx, cancel := context.WithTimeout(context.Background(), helperTimeout)
	defer cancel()
	bin := "docker-credential-" + name
	cmd := exec.CommandContext(ctx, bin, "get")
	cmd.Stdin = strings.NewReader(server)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		if strings.Contains(strings.ToLower(out.String()), "credentials not found") {
			return Credential{}, nil
		}
		// Its output is not shown: it may hold a secret.
		return Credential{}, fmt.Errorf("credential helper %s get %s: %w", bin, server, err)
	}
	var doc struct {
		Username string `json:"Username"`
		Secret   string `json:"Secret"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		return Credential{}, fmt.Errorf("credential helper %s get %s: its answer is not JSON", bin, server)
	}
	if doc.Username == "<token>" {
		return Credential{IdentityToken: doc.Secret}, nil
	}
	return Credential{Username: doc.Username, Password: doc.Secret}, nil
}
