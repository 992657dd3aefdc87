//go:build tools

// Package tools pins cyclonedx-gomod, which writes the SBOM of each image
// (`make images`), in a module of its own so that the SDK's go.mod never
// requires it.
package tools

import _ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
