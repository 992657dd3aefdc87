// Command kustomize-render prints the objects a kustomization builds, as
// `kustomize build DIR` would (sigs.k8s.io/kustomize/api's krusty, at the
// version of this module's go.mod), for the tests of the examples'
// manifests, which apply them to a real API server:
//
//	kustomize-render examples/node-agent/deploy > objects.yaml
//
// It reads the directory from the disk, with kustomize's default options
// (no plugins, no remote bases).
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kustomize-render DIR")
		os.Exit(2)
	}
	out, err := render(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustomize-render:", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

// render builds the kustomization in dir and returns its objects as YAML
// documents.
func render(dir string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}
