module github.com/benchkite/benchkite

go 1.26.8

require (
	github.com/buildkite/go-buildkite/v3 v3.13.0
	github.com/buildkite/go-pipeline v0.18.1
	github.com/buildkite/interpolate v0.1.5
	github.com/google/go-cmp v0.7.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/cenkalti/backoff v1.1.1-0.20171020064038-309aa717adbf // indirect
	github.com/google/go-querystring v1.0.0 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/oleiade/reflections v1.1.0 // indirect
	golang.org/x/net v0.23.0 // indirect
	golang.org/x/text v0.23.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
