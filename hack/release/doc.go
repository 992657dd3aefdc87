// Package release tests what operators install and how a release makes
// it: that `make images` builds the same images from two clean clones of
// one commit, that each image's SBOM lists exactly the modules its binary
// was built with, that each image runs its program as the user, with the
// labels, hack/images.sh says, and that `make release` as a dry run
// refuses what it must and changes nothing. It holds tests only.
package release
