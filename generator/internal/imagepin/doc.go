// Package imagepin turns image tags into digests through the registry API,
// once per distinct image, before any GPU step is asked for.
//
// Tags such as vllm/vllm-openai:nightly move during the night: jobs of one
// build that start hours apart would pull different vLLM builds, and a
// summary that records a tag does not say what ran. A tag that does not
// exist would only be found by a GPU job stuck pulling. Resolving every
// image on the CPU step pins all jobs of a build to one digest and turns a
// missing or forbidden image into an error that names the image and the
// registry's answer.
package imagepin
