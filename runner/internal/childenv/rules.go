package childenv

import (
	"slices"
	"strings"
)

// set is a group of allowed variables: exact names and name prefixes.
type set struct {
	names    []string
	prefixes []string
}

func (s set) has(name string) bool {
	if slices.Contains(s.names, name) {
		return true
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

var (
	// basics is what any program expects to find.
	basics = set{
		names:    []string{"PATH", "HOME", "USER", "LANG", "TZ", "TMPDIR", "TERM"},
		prefixes: []string{"LC_"},
	}
	// network is how a cluster reaches the outside: proxies and CA
	// bundles. Without them a proxied cluster could download nothing.
	network = set{names: []string{
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
		"http_proxy", "https_proxy", "no_proxy", "all_proxy",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	}}
	// gpu is what vLLM and torch read. LD_LIBRARY_PATH and PYTHONPATH
	// come from the job (the image sets them, e.g. the CUDA base images'
	// LD_LIBRARY_PATH), never from a recipe.
	gpu = set{
		names: []string{"OMP_NUM_THREADS", "LD_LIBRARY_PATH", "PYTHONPATH"},
		prefixes: []string{
			"CUDA_", "ROCM_", "ROCR_", "HIP_", "HSA_", "NCCL_", "RCCL_",
			"VLLM_", "HF_", "PYTORCH_", "TORCH_",
		},
	}
	hf = set{prefixes: []string{"HF_"}}
	// pip is pip's index and download settings; nothing that changes
	// where or what pip installs (PIP_TARGET, PIP_PREFIX, PIP_USER, ...),
	// and no PIP_CONFIG_FILE: the runner sets it to /dev/null so that pip
	// reads no configuration file.
	pip = set{names: []string{
		"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX",
		"PIP_TRUSTED_HOST", "PIP_CONSTRAINT", "PIP_CERT", "PIP_CLIENT_CERT",
		"PIP_PROXY", "PIP_TIMEOUT", "PIP_DEFAULT_TIMEOUT", "PIP_RETRIES",
		"PIP_CACHE_DIR", "PIP_NO_CACHE_DIR", "PIP_PREFER_BINARY",
		"PIP_ONLY_BINARY", "PIP_NO_BINARY", "PIP_KEYRING_PROVIDER",
	}}
	bfcl   = set{prefixes: []string{"BFCL_"}}
	agent  = set{prefixes: []string{"BUILDKITE_", "AWS_"}}
	docker = set{names: []string{
		"DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
		"DOCKER_CONTEXT", "DOCKER_API_VERSION", "XDG_RUNTIME_DIR",
	}}
)

// hfTokens are the Hugging Face token variables: secret, and given only
// to roles that download from the Hub.
var hfTokens = []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}

// never are tokens the runner itself reads; no child gets them, whatever
// its role and whoever sets them.
var never = []string{"BUILDKITE_API_TOKEN", "BENCHKITE_INGEST_TOKEN", "BENCHKITE_API_TOKEN", "INGEST_BEARER_TOKEN"}

// agentToken is what buildkite-agent, and only buildkite-agent, needs.
const agentToken = "BUILDKITE_AGENT_ACCESS_TOKEN"

// rule is what one role gets from the job's environment.
type rule struct {
	sets []set
	// hfToken lets the Hugging Face tokens through.
	hfToken bool
	// secretSets are sets whose secret-looking variables still pass
	// (the agent's own token, AWS credentials for artifact uploads).
	secretSets []set
	// loopback adds 127.0.0.1 and localhost to NO_PROXY when a proxy is
	// set: the child talks to the local server, and Python's HTTP clients
	// would send even loopback requests through the proxy.
	loopback bool
}

var rules = map[Role]rule{
	Install:      {sets: []set{basics, network, pip}},
	Server:       {sets: []set{basics, network, gpu}, hfToken: true},
	Bench:        {sets: []set{basics, network, gpu}, hfToken: true, loopback: true},
	LMEval:       {sets: []set{basics, network, hf}, hfToken: true, loopback: true},
	BFCL:         {sets: []set{basics, network, hf, bfcl}, loopback: true},
	Agent:        {sets: []set{basics, network, agent}, secretSets: []set{agent}},
	Docker:       {sets: []set{basics, network, docker}},
	DockerServer: {sets: []set{basics, network, docker}, hfToken: true},
	DockerBench:  {sets: []set{basics, network, docker}, hfToken: true},
}
