package summary

// ProvenanceSchemaVersion is the version of the provenance manifest;
// bumped when a field changes meaning.
const ProvenanceSchemaVersion = 1

// Provenance is what a run needs to be re-run: the recipe as it was, the
// image by ID and digest, the runtime, the server's environment without
// secrets, and how a built image was built. It is
// results/<recipe>/provenance/manifest.json, and ingest records carry it.
type Provenance struct {
	SchemaVersion int              `json:"schema_version"`
	Recipe        ProvenanceRecipe `json:"recipe"`
	Image         ProvenanceImage  `json:"image"`
	Runtime       string           `json:"runtime"`
	GPU           string           `json:"gpu"`
	// Env is the server's environment (profile and recipe); a variable
	// whose name looks secret keeps its name, not its value.
	Env   []ProvenanceVar  `json:"env"`
	Build *ProvenanceBuild `json:"build,omitempty"`
}

// ProvenanceRecipe names the recipe file, its SHA-256 and its copy beside
// the manifest.
type ProvenanceRecipe struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Copy   string `json:"copy"`
}

// ProvenanceImage is the image that ran: the reference, the one pulled,
// what chose it, and what docker knows of it (empty on native runtimes,
// where the image is the pod's and the job cannot ask).
type ProvenanceImage struct {
	Ref         string   `json:"ref"`
	Pull        string   `json:"pull,omitempty"`
	Source      string   `json:"source"`
	ID          string   `json:"id,omitempty"`
	RepoDigests []string `json:"repo_digests,omitempty"`
}

// ProvenanceVar is one variable; Redacted says its value was removed.
type ProvenanceVar struct {
	Name     string `json:"name"`
	Value    string `json:"value,omitempty"`
	Redacted bool   `json:"redacted,omitempty"`
	// FromEnv: the recipe took the value from the job's environment.
	FromEnv bool `json:"from_env,omitempty"`
}

// ProvenanceBuild is how a built image was built: the Dockerfile (and its
// copy), the context, the build args (secret-looking names redacted) and
// the source tree it came from.
type ProvenanceBuild struct {
	Dockerfile       string          `json:"dockerfile"`
	DockerfileSHA256 string          `json:"dockerfile_sha256"`
	DockerfileCopy   string          `json:"dockerfile_copy"`
	Context          string          `json:"context"`
	Args             []ProvenanceVar `json:"args"`
	SourceRepo       string          `json:"source_repo,omitempty"`
	Commit           string          `json:"commit,omitempty"`
	// ContextSubdir is the context relative to the repository's top.
	ContextSubdir string `json:"context_subdir"`
	// Dirty: the source tree had changes not in Commit.
	Dirty bool `json:"dirty"`
}
