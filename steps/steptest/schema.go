package steptest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/benchkite/benchkite/internal/testutil"
)

// schemaPath is where the shared reference material keeps Buildkite's
// pipeline schema, relative to the directory beside the module root.
var schemaPath = filepath.Join("shared", "reference", "buildkite-pipeline-schema.json")

var schema struct {
	once sync.Once
	path string // where the schema was looked for
	sch  *jsonschema.Schema
	err  error // nil with a nil sch means the file is missing
}

// loadSchema compiles the schema once for the whole test binary.
func loadSchema() (*jsonschema.Schema, string, error) {
	schema.once.Do(func() {
		root, err := testutil.FindModuleRoot()
		if err != nil {
			schema.err = err
			return
		}
		schema.path = filepath.Join(filepath.Dir(root), schemaPath)
		f, err := os.Open(schema.path)
		if errors.Is(err, os.ErrNotExist) {
			return
		} else if err != nil {
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
// Buildkite's pipeline JSON schema (../shared/reference beside the module
// root). Without the schema file the test fails in CI and is skipped
// elsewhere.
func AssertSchemaValid(t testing.TB, pipelineJSON []byte) {
	t.Helper()
	sch, path, err := loadSchema()
	if err != nil {
		t.Fatalf("loading pipeline schema %s: %v", path, err)
	}
	if sch == nil {
		testutil.Missing(t, "no pipeline schema at %s", path)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(pipelineJSON))
	if err != nil {
		t.Fatalf("decoding pipeline JSON: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("pipeline is not valid against %s: %v\npipeline:\n%s", filepath.Base(path), err, pipelineJSON)
	}
}
