package steptest

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/benchkite/benchkite/internal/testutil"
)

// schemaFile is Buildkite's pipeline schema in the reference corpus.
const schemaFile = "buildkite-pipeline-schema.json"

var schema struct {
	once sync.Once
	path string // where the schema was looked for
	sch  *jsonschema.Schema
	err  error // nil with a nil sch means the file is missing
}

// loadSchema compiles the schema once for the whole test binary.
func loadSchema() (*jsonschema.Schema, string, error) {
	schema.once.Do(func() {
		path, err := testutil.ReferencePath(schemaFile)
		if err != nil || path == "" {
			schema.err = err
			return
		}
		schema.path = path
		f, err := os.Open(schema.path)
		if err != nil {
			schema.err = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schema.err = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(schema.path, doc); err != nil {
			schema.err = err
			return
		}
		schema.sch, schema.err = c.Compile(schema.path)
	})
	return schema.sch, schema.path, schema.err
}

// AssertSchemaValid fails the test unless pipelineJSON is valid against
// Buildkite's pipeline JSON schema, from the reference corpus. Without
// BENCHKITE_REFERENCE_DIR the test is skipped, saying so.
func AssertSchemaValid(t testing.TB, pipelineJSON []byte) {
	t.Helper()
	sch, path, err := loadSchema()
	if err != nil {
		t.Fatalf("loading pipeline schema %s: %v", path, err)
	}
	if sch == nil {
		t.Skipf("SKIPPED: the pipeline schema %s is in the reference corpus; set %s to its directory (.ci/run does)", schemaFile, testutil.ReferenceEnv)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(pipelineJSON))
	if err != nil {
		t.Fatalf("decoding pipeline JSON: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("pipeline is not valid against %s: %v\npipeline:\n%s", filepath.Base(path), err, pipelineJSON)
	}
}
